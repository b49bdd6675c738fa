"""The tree as a picture (Mermaid, Graphviz dot) and in words (for onboarding)."""

from __future__ import annotations

from wizard.playbook.model import ConclusionNode, DecisionNode, Node, Playbook, ProbeNode, QuestionNode
from wizard.untrusted import visible


def _label(node: Node) -> str:
    if isinstance(node, QuestionNode):
        text = node.prompt.source if node.prompt else node.id
    elif isinstance(node, ProbeNode):
        text = f"probe {node.probe}"
    elif isinstance(node, DecisionNode):
        text = f"decide: {node.id}"
    elif isinstance(node, ConclusionNode):
        text = f"{node.diagnosis} ({node.severity})"
    else:
        text = node.id
    return " ".join(visible(text).split())[:80]


def _mermaid(text: str) -> str:
    """Text inside a quoted Mermaid label: quotes and pipes as entity codes, so ``"A'" in ...``
    reads as written instead of ``'A'' in``."""
    return text.replace("#", "#35;").replace('"', "#quot;").replace("|", "#124;")


def _dot(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def mermaid(pb: Playbook) -> str:
    shapes = {
        QuestionNode: ('[/"', '"/]'),
        ProbeNode: ('[["', '"]]'),
        DecisionNode: ('{"', '"}'),
        ConclusionNode: ('(["', '"])'),
    }
    lines = ["flowchart TD"]
    by_step: dict[str | None, list[Node]] = {}
    for node in pb.nodes.values():
        by_step.setdefault(node.step, []).append(node)
    for i, step in enumerate(pb.steps, 1):
        nodes = by_step.get(step.id, [])
        if not nodes:
            continue
        lines.append(f'  subgraph {step.id}["{i}. {_mermaid(visible(step.title))}"]')
        for node in nodes:
            left, right = shapes[type(node)]
            lines.append(f"    {node.id}{left}{_mermaid(_label(node))}{right}")
        lines.append("  end")
    for node in by_step.get(None, []):
        left, right = shapes[type(node)]
        lines.append(f"  {node.id}{left}{_mermaid(_label(node))}{right}")
    for node in pb.nodes.values():
        for label, target in ((e.label, e.target) for e in node.edges()):
            text = _mermaid(" ".join(visible(label).split()))
            lines.append(f'  {node.id} -->|"{text}"| {target}' if text else f"  {node.id} --> {target}")
    return "\n".join(lines) + "\n"


def dot(pb: Playbook) -> str:
    shapes = {QuestionNode: "parallelogram", ProbeNode: "box3d", DecisionNode: "diamond", ConclusionNode: "oval"}
    lines = [f'digraph "{pb.id}" {{', "  rankdir=TB;", '  node [fontname="Helvetica"];']
    for i, step in enumerate(pb.steps, 1):
        members = [n for n in pb.nodes.values() if n.step == step.id]
        if not members:
            continue
        lines.append(f'  subgraph "cluster_{step.id}" {{ label="{i}. {_dot(visible(step.title))}";')
        for node in members:
            lines.append(f'    {node.id} [shape={shapes[type(node)]}, label="{_dot(_label(node))}"];')
        lines.append("  }")
    for node in pb.nodes.values():
        if node.step is None:
            lines.append(f'  {node.id} [shape={shapes[type(node)]}, label="{_dot(_label(node))}"];')
    for node in pb.nodes.values():
        for label, target in ((e.label, e.target) for e in node.edges()):
            lines.append(f'  {node.id} -> {target} [label="{_dot(visible(label))}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def explain(pb: Playbook) -> str:
    """The whole tree in words, step by step: what each node does and why, where it leads."""
    out = [f"# {pb.title}", "", pb.description.strip(), ""]
    grouped: dict[str | None, list[Node]] = {}
    for node in pb.nodes.values():
        grouped.setdefault(node.step, []).append(node)
    sections: list[tuple[str, str, list[Node]]] = [
        (f"Step {i} of {len(pb.steps)}: {s.title}", s.explain, grouped.get(s.id, [])) for i, s in enumerate(pb.steps, 1)
    ]
    if grouped.get(None):
        sections.append(("Outcomes and routing", "", grouped[None]))
    for title, why, nodes in sections:
        out += [f"## {title}", ""]
        if why:
            out += [why.strip(), ""]
        for node in nodes:
            out += _node_lines(node)
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _node_lines(node: Node) -> list[str]:
    """One node in words: what it is, why it is there, where each edge leads."""
    out: list[str] = []
    if isinstance(node, QuestionNode):
        out.append(f"- **Question `{node.id}`** ({node.type}): {node.prompt.source if node.prompt else ''}")
        if node.choices:
            out.append("  choices: " + "; ".join(f"{c.label} (`{c.value}`)" for c in node.choices))
        if node.default is not None:
            out.append(f"  default: `{node.default}`")
    elif isinstance(node, ProbeNode):
        out.append(f"- **Probe `{node.id}`** runs `{node.probe}` (timeout {node.timeout:g} s)")
    elif isinstance(node, DecisionNode):
        out.append(f"- **Decision `{node.id}`**")
    elif isinstance(node, ConclusionNode):
        summary = node.summary.source.strip() if node.summary else ""
        out.append(f"- **Diagnosis `{node.diagnosis}`** ({node.severity}): {summary}")
        if node.continues is not None:
            where = node.continues.playbook.source.strip()
            ids = ", ".join(f"`{c}`" for c in node.continues.choices)
            out.append(f"  then continues into the playbook `{where}` names, one of: {ids}")
    if node.explain:
        out.append("  " + " ".join(node.explain.split()))
    out += [f"  - {e.label or 'then'} -> `{e.target}`" for e in node.edges()]
    return out
