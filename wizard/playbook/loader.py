"""Load a playbook and report every problem at once, each as ``file:line:column: message``.

Checks: YAML syntax, unknown and missing fields, duplicate ids, unknown targets (with a
"did you mean"), unknown probes and parameters, parameter types, conditions and templates
that name unknown answers or facts, dead ends, unreachable nodes, and cycles with no way
out. A ``uses:`` item inserts a fragment's nodes (``fragments/ID.yaml`` on the search path), each
checked as if written there, its problems at the fragment file's own line and column.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from wizard.errors import PlaybookError
from wizard.formatting import verb
from wizard.playbook import grammar, patterns
from wizard.playbook.conditions import (
    Expression,
    ExpressionError,
    Reference,
    Template,
    parse,
    parse_template,
    type_problems,
)
from wizard.playbook.derived import HealthPlaybook, health_order, health_playbooks, not_offered
from wizard.playbook.model import (
    QUESTION_TYPES,
    SEVERITIES,
    AnswerInvalid,
    Branch,
    Choice,
    ConclusionNode,
    Continuation,
    DecisionNode,
    Node,
    Playbook,
    ProbeNode,
    QuestionNode,
    Step,
    Validation,
    reachable,
    yes_no,
)
from wizard.playbook.yaml_source import (
    MAX_YAML_CHARS,
    Located,
    Path_,
    YamlSyntaxError,
    comments_cutting_text,
    load_located,
)
from wizard.probes.base import OUTCOMES, PARAM_TYPES, ParamSpec, ProbeInfo
from wizard.untrusted import cut

# The grammar's patterns, used with fullmatch: Python's '$' also matches before a trailing newline,
# and an id "name\n" passed validate, then broke the graph and the saved-answers file name.
ID_PATTERN = re.compile(str(grammar.ID["pattern"]))
PLAYBOOK_ID_PATTERN = re.compile(str(grammar.PLAYBOOK_ID["pattern"]))
TOP_KEYS = grammar.names(grammar.TOP)
COMMON_KEYS = grammar.names(grammar.COMMON)
KIND_KEYS: dict[str, tuple[str, ...]] = {kind: grammar.names(fields) for kind, fields in grammar.KINDS.items()}
USES_KEYS = grammar.names(grammar.USES)
FRAGMENT_KEYS = grammar.names(grammar.FRAGMENT)
NEED_NAME = re.compile(str(grammar.ID["pattern"]))
# Positions of a fragment's values, kept in the playbook's own table under this prefix:
# (FRAGMENT, n, *path in fragment file n), so a problem there names that file, line and column.
FRAGMENT = "__fragment__"


LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")  # what str.splitlines() and YAML break at


def _suggest(name: str, options: list[str] | tuple[str, ...]) -> str:
    close = difflib.get_close_matches(str(name), [str(o) for o in options], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


class _Checker:
    def __init__(
        self, path: str, located: Located, probes: Mapping[str, ProbeInfo], search: Sequence[Path] = ()
    ) -> None:
        self.path = path
        self.doc = located
        self.probes = probes
        self.files = [path]  # the playbook, then each fragment it inserted (FRAGMENT, n) in order
        self.search = tuple(search)  # the playbook search path's places: directories, or a plugin's one file
        self.fragment_dirs = tuple((p if p.is_dir() else p.parent) / grammar.FRAGMENT_DIR for p in self.search)
        self.health: list[HealthPlaybook] | None = None  # the derived list, read once a load
        self.fragment_chars = 0  # the fragments' text read for this playbook, bounded like one playbook
        self.fragment_data: dict[int, dict[str, Any]] = {}
        self.unfilled: set[str] = set()  # ``$need`` targets left empty, their problem already said at the 'uses'
        self.problems: list[tuple[int, int, int, str]] = []

    def file_of(self, where: Path_) -> int:
        return int(where[1]) if len(where) > 1 and where[0] == FRAGMENT else 0

    def problem(self, where: Path_, message: str, column_offset: int = 0) -> None:
        line, col = self.doc.where(where)
        self.problems.append((self.file_of(where), line, col + column_offset, message))

    def at(self, where: Path_) -> str:
        """``line N``, or ``FILE:N`` for a place in a fragment: where a first duplicate was written."""
        line = self.doc.where(where)[0]
        return f"line {line}" if self.file_of(where) == 0 else f"{self.files[self.file_of(where)]}:{line}"

    def key_problem(self, where: Path_, message: str) -> None:
        self.problem((*where, "__key__") if (*where, "__key__") in self.doc.positions else where, message)

    def formatted(self) -> list[str]:
        return [f"{self.files[f]}:{line}:{col}: {msg}" for f, line, col, msg in sorted(self.problems)]

    # -- fields -------------------------------------------------------------------------
    def unknown_keys(self, data: Mapping[str, Any], allowed: tuple[str, ...], where: Path_, what: str) -> None:
        for key in data:
            if key not in allowed:
                self.key_problem(
                    (*where, key),
                    f"unknown field {key!r} in {what}{_suggest(key, allowed)}; allowed: {', '.join(allowed)}",
                )

    def text(self, data: Mapping[str, Any], key: str, where: Path_, what: str, required: bool = True) -> str:
        value = data.get(key)
        if value is None:
            if required:
                self.problem(where, f"{what} needs '{key}'")
            return ""
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            self.problem((*where, key), f"'{key}' must be text, not {type(value).__name__}")
            return ""
        return str(value)

    def line(self, data: Mapping[str, Any], key: str, where: Path_, what: str, required: bool = True) -> str:
        """A title or label: text of one line. A line break in one would start a line of its own in the
        answers template, where YAML reads it as an answer (``workload_cmd: ...``)."""
        return self.one_line(self.text(data, key, where, what, required), (*where, key), f"'{key}'")

    def one_line(self, value: str, where: Path_, what: str) -> str:
        if any(ch in LINE_BREAKS for ch in value):
            self.problem(where, f"{what} must be one line: it holds a line break")
        return value

    def template(self, value: Any, where: Path_) -> Template | None:
        if value is None:
            return None
        if not isinstance(value, str):
            value = str(value)
        try:
            return parse_template(value)
        except ExpressionError as exc:
            self.problem(where, f"bad template: {exc}", exc.column)
            return None

    def expression(self, value: Any, where: Path_) -> Expression | None:
        if not isinstance(value, (str, bool)):
            self.problem(where, 'a condition must be an expression string, e.g. "answers.has_trace == true"')
            return None
        try:
            return parse(str(value))
        except ExpressionError as exc:
            self.problem(where, f"bad condition {str(value)!r}: {exc}", exc.column)
            return None


def _steps(c: _Checker, data: Any) -> tuple[Step, ...]:
    if data is None:
        return ()
    if not isinstance(data, list):
        c.problem(("steps",), "'steps' must be a list of {id, title, explain}")
        return ()
    steps: list[Step] = []
    seen: set[str] = set()
    for i, raw in enumerate(data):
        where: Path_ = ("steps", i)
        if not isinstance(raw, dict):
            c.problem(where, "each step must be a mapping with id and title")
            continue
        c.unknown_keys(raw, grammar.names(grammar.STEP), where, "a step")
        sid = c.text(raw, "id", where, "a step")
        if sid in seen:
            c.problem((*where, "id"), f"duplicate step id {sid!r}")
        seen.add(sid)
        steps.append(Step(sid, c.line(raw, "title", where, f"step {sid!r}"), c.text(raw, "explain", where, "", False)))
    return tuple(steps)


def _choices(c: _Checker, raw: Any, where: Path_) -> tuple[Choice, ...]:
    if isinstance(raw, dict) and "from" in raw:
        return tuple(Choice(p.id, p.label) for p in _derived(c, raw, where))
    if not isinstance(raw, list) or not raw:
        c.problem(where, "a select question needs 'choices': a list of {value, label}")
        return ()
    out: list[Choice] = []
    for i, item in enumerate(raw):
        if isinstance(item, dict):
            c.unknown_keys(item, grammar.names(grammar.CHOICE), (*where, i), "a choice")
            if "value" not in item:
                c.problem((*where, i), "a choice needs 'value'")
                continue
            if "label" in item:
                label = c.line(item, "label", (*where, i), "a choice")
            else:  # the value is its own label
                label = c.one_line(str(item["value"]), (*where, i, "value"), "a choice's value (its label)")
            out.append(Choice(item["value"], label))
        elif isinstance(item, (str, int, float, bool)):
            out.append(Choice(item, c.one_line(str(item), (*where, i), "a choice (its own label)")))
        else:
            c.problem((*where, i), "a choice is a value or {value, label}")
    values = [ch.value for ch in out]
    for v in values:
        if values.count(v) > 1:
            c.problem(where, f"duplicate choice value {v!r}")
            break
    return tuple(out)


def _validation(c: _Checker, raw: Any, where: Path_, qtype: str) -> Validation:
    if raw is None:
        return Validation()
    if not isinstance(raw, dict):
        c.problem(where, "'validate' must be a mapping (pattern, min, max, exists)")
        return Validation()
    c.unknown_keys(raw, grammar.names(grammar.VALIDATE), where, "'validate'")
    pattern = raw.get("pattern")
    if pattern is not None:
        try:
            patterns.check(str(pattern))
        except patterns.PatternError as exc:
            c.problem((*where, "pattern"), f"bad pattern: {exc}")
            pattern = None
    for bound in ("min", "max"):
        if bound in raw and (not isinstance(raw[bound], (int, float)) or isinstance(raw[bound], bool)):
            c.problem((*where, bound), f"'{bound}' must be a number")
    if ("min" in raw or "max" in raw) and qtype != "number":
        c.problem(where, "'min'/'max' apply only to number questions")
    if raw.get("exists") and qtype != "path":
        c.problem((*where, "exists"), "'exists' applies only to path questions")
    return Validation(
        str(pattern) if pattern is not None else None,
        raw.get("min") if isinstance(raw.get("min"), (int, float)) else None,
        raw.get("max") if isinstance(raw.get("max"), (int, float)) else None,
        bool(raw.get("exists", False)),
    )


def _question(c: _Checker, raw: dict[str, Any], base: dict[str, Any], where: Path_) -> QuestionNode:
    qtype = raw.get("type", "text")
    if qtype not in QUESTION_TYPES:
        c.problem(
            (*where, "type"),
            f"unknown question type {qtype!r}{_suggest(qtype, QUESTION_TYPES)}; "
            f"choose from {', '.join(QUESTION_TYPES)}",
        )
        qtype = "text"
    node = QuestionNode(**base, type=qtype)
    node.prompt = c.template(c.text(raw, "prompt", where, f"question {base['id']!r}"), (*where, "prompt"))
    node.help = c.text(raw, "help", where, "", False)
    if qtype == "select":
        node.choices = _choices(c, raw.get("choices"), (*where, "choices"))
    elif "choices" in raw:
        c.problem((*where, "choices"), "'choices' applies only to select questions")
    node.validation = _validation(c, raw.get("validate"), (*where, "validate"), qtype)
    node.default = raw.get("default")
    if node.default is None and qtype == "confirm":
        node.default = True  # what Enter answers at the prompt, so --defaults and the template agree
    if node.default is not None:
        try:
            node.default = node.coerce(node.default, check_exists=False)
        except AnswerInvalid as exc:
            c.problem((*where, "default"), f"bad default: {exc}")
    nxt = raw.get("next")
    if isinstance(nxt, dict):
        if qtype == "confirm":  # yes/no/on/off keys all mean the boolean answer
            nxt = {(k if (answer := yes_no(k)) is None else answer): v for k, v in nxt.items()}
        node.next_by_value = {k: str(v) for k, v in nxt.items()}
        node.next = node.next_by_value.get("*")
    elif nxt is not None:
        node.next = str(nxt)
    return node


def _param(c: _Checker, node: ProbeNode, pspec: ParamSpec | None, name: str, value: Any, *, where: Path_) -> Any:
    """One parameter's value: a template, a list that holds templates, or a literal of the declared type."""
    if isinstance(value, str) and "{{" in value:
        return c.template(value, where)
    if isinstance(value, list) and any(isinstance(v, str) and "{{" in v for v in value):
        items: list[Any] = []
        for i, item in enumerate(value):
            if not isinstance(item, str):
                c.problem((*where, i), f"items of parameter {name!r} must be text, not {type(item).__name__}")
            items.append(c.template(item, (*where, i)) if isinstance(item, str) and "{{" in item else item)
        if pspec is not None and not pspec.type.startswith("list") and pspec.type != "paths":
            c.problem(where, f"parameter {name!r} of probe {node.probe!r} must be {pspec.type}, not a list")
        return items
    if pspec is not None and not PARAM_TYPES[pspec.type](value):
        c.problem(
            where,
            f"parameter {name!r} of probe {node.probe!r} must be {pspec.type}, not {type(value).__name__} ({value!r})",
        )
    return value


def _params(c: _Checker, node: ProbeNode, spec: ProbeInfo | None, raw: dict[str, Any], where: Path_) -> None:
    params = raw.get("params") or {}
    if not isinstance(params, dict):
        c.problem((*where, "params"), "'params' must be a mapping of parameter name to value")
        params = {}
    for name, value in params.items():
        pwhere = (*where, "params", name)
        pspec = spec.param(name) if spec else None
        if spec is not None and pspec is None:
            c.key_problem(
                pwhere,
                f"probe {node.probe!r} has no parameter {name!r}{_suggest(name, [p.name for p in spec.params])}; "
                f"it takes: {', '.join(p.name for p in spec.params) or 'none'}",
            )
        node.params[name] = _param(c, node, pspec, name, value, where=pwhere)
    for pspec in spec.params if spec is not None else ():
        if pspec.required and pspec.name not in params:
            c.problem(where, f"probe {node.probe!r} needs parameter {pspec.name!r} ({pspec.help})")


def _outcomes(c: _Checker, node: ProbeNode, raw: dict[str, Any], where: Path_) -> None:
    on = raw.get("on") or {}
    if not isinstance(on, dict):
        c.problem((*where, "on"), f"'on' maps outcomes ({', '.join(OUTCOMES)}) to node ids")
        return
    for outcome, target in on.items():
        if outcome not in OUTCOMES:
            c.key_problem(
                (*where, "on", outcome),
                f"unknown outcome {outcome!r}{_suggest(outcome, OUTCOMES)}; outcomes are {', '.join(OUTCOMES)}",
            )
        node.on[str(outcome)] = str(target)


def _probe(c: _Checker, raw: dict[str, Any], base: dict[str, Any], where: Path_) -> ProbeNode:
    node = ProbeNode(**base)
    node.probe = c.text(raw, "probe", where, f"probe node {base['id']!r}")
    spec = c.probes.get(node.probe)
    if node.probe and spec is None:
        c.problem(
            (*where, "probe"),
            f"unknown probe {node.probe!r}{_suggest(node.probe, list(c.probes))}; "
            f"registered: {', '.join(sorted(c.probes))}",
        )
    _params(c, node, spec, raw, where)
    timeout = raw.get("timeout", 600)
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
        c.problem((*where, "timeout"), f"'timeout' must be a positive number of seconds, not {timeout!r}")
    else:
        node.timeout = float(timeout)
    _outcomes(c, node, raw, where)
    if raw.get("next") is not None:
        node.next = str(raw["next"])
    return node


def _decision(c: _Checker, raw: dict[str, Any], base: dict[str, Any], where: Path_) -> DecisionNode:
    node = DecisionNode(**base)
    branches = raw.get("branches")
    if not isinstance(branches, list) or not branches:
        c.problem(where, f"decision {base['id']!r} needs 'branches': a list of {{when, goto}}")
        branches = []
    out: list[Branch] = []
    for i, b in enumerate(branches):
        bwhere = (*where, "branches", i)
        if not isinstance(b, dict) or "when" not in b or "goto" not in b:
            c.problem(bwhere, "each branch needs 'when' (a condition) and 'goto' (a node id)")
            continue
        c.unknown_keys(b, grammar.names(grammar.BRANCH), bwhere, "a branch")
        expr = c.expression(b["when"], (*bwhere, "when"))
        if expr is not None:
            out.append(Branch(expr, str(b["goto"]), c.text(b, "because", bwhere, "a branch", required=False)))
    node.branches = tuple(out)
    if raw.get("default") is not None:
        node.default = str(raw["default"])
    node.default_because = c.text(raw, "default_because", where, f"decision {base['id']!r}", required=False)
    return node


def _conclusion(c: _Checker, raw: dict[str, Any], base: dict[str, Any], where: Path_) -> ConclusionNode:
    node = ConclusionNode(**base)
    node.diagnosis = c.text(raw, "diagnosis", where, f"conclusion {base['id']!r}")
    severity = raw.get("severity", "info")
    if severity not in SEVERITIES:
        c.problem(
            (*where, "severity"),
            f"unknown severity {severity!r}{_suggest(str(severity), SEVERITIES)}; choose from {', '.join(SEVERITIES)}",
        )
    else:
        node.severity = severity
    node.summary = c.template(c.text(raw, "summary", where, f"conclusion {base['id']!r}"), (*where, "summary"))

    def texts(key: str) -> tuple[Template, ...]:
        items = raw.get(key) or []
        if isinstance(items, str):
            items = [items]
        if not isinstance(items, list):
            c.problem((*where, key), f"'{key}' must be a list of texts")
            return ()
        return tuple(t for i, item in enumerate(items) if (t := c.template(item, (*where, key, i))) is not None)

    node.evidence = texts("evidence")
    node.fix = texts("fix")
    links = raw.get("links") or []
    node.links = tuple(str(x) for x in links) if isinstance(links, list) else ()
    if "continue" in raw:
        node.continues = _continuation(c, raw["continue"], (*where, "continue"))
    return node


CONTINUE_KEYS = grammar.names(grammar.CONTINUE)


def _continuation(c: _Checker, raw: Any, where: Path_) -> Continuation | None:
    """A conclusion's ``continue``: a playbook template, the ids it may name (never a path: a run loads
    them by name from the search path), and which of them are worth running afterwards."""
    if not isinstance(raw, dict):
        c.problem(where, "'continue' must be a mapping with 'playbook' and 'choices'")
        return None
    c.unknown_keys(raw, CONTINUE_KEYS, where, "'continue'")
    choices = raw.get("choices")
    if isinstance(choices, dict) and "from" in choices:
        choices = health_order(_derived(c, choices, (*where, "choices")))
    if not isinstance(choices, list) or not choices:
        c.problem(
            (*where, "choices") if "choices" in raw else where, "'continue' needs 'choices': a list of playbook ids"
        )
        choices = []
    ids: list[str] = []
    for i, choice in enumerate(choices):
        if not isinstance(choice, str) or not PLAYBOOK_ID_PATTERN.fullmatch(choice):
            c.problem((*where, "choices", i), f"{choice!r} is not a playbook id (lower-case letters, digits, '-', '_')")
        elif choice in ids:
            c.problem((*where, "choices", i), f"duplicate choice {choice!r}")
        else:
            ids.append(choice)
    template = c.template(c.text(raw, "playbook", where, "'continue'"), (*where, "playbook"))
    if template is None:
        return None
    literal = template.parts[0] if len(template.parts) == 1 and isinstance(template.parts[0], str) else None
    if literal is not None and ids and literal not in ids:
        c.problem((*where, "playbook"), f"playbook {literal!r} is not one of the choices: {', '.join(ids)}")
    also = c.template(raw["also"], (*where, "also")) if raw.get("also") is not None else None
    return Continuation(template, tuple(ids), also)


def unknown_continuations(path: str, pb: Playbook, known: frozenset[str]) -> list[str]:
    """``file:line:column`` for each ``continue`` choice that names no playbook on the search path
    (``validate`` checks this; loading one file alone cannot know the catalogue)."""
    if not any(isinstance(node, ConclusionNode) and node.continues is not None for node in pb.nodes.values()):
        return []  # nothing to look up: the file is not read again
    text = Path(path).read_text(encoding="utf-8")
    located = load_located(text)
    c = _Checker(path, located, {})
    raw_nodes = located.data.get("nodes") if isinstance(located.data, dict) else None
    for i, raw in enumerate(raw_nodes if isinstance(raw_nodes, list) else []):
        node = pb.nodes.get(str(raw.get("id"))) if isinstance(raw, dict) else None
        if isinstance(node, ConclusionNode) and node.continues is not None:
            written = raw["continue"]["choices"]  # a derived list ({from: ...}) is read from the search path
            for j, choice in enumerate(written if isinstance(written, list) else []):
                if choice not in known:
                    close = _suggest(choice, sorted(known))
                    c.problem(("nodes", i, "continue", "choices", j), f"no playbook named {choice!r}{close}")
    return c.formatted()


# -- lists the loader derives from the search path (``choices: {from: health-playbooks}``: wizard/playbook/derived.py)


def _triage(c: _Checker, raw: Any) -> None:
    """A health playbook's own ``triage``: one line of label, and its place in the triage's list."""
    if raw is None:
        return
    if not isinstance(raw, dict):
        c.problem(("triage",), "'triage' is a mapping: {label: how the triage offers this playbook, offered: N}")
        return
    c.unknown_keys(raw, grammar.names(grammar.TRIAGE), ("triage",), "'triage'")
    c.line(raw, "label", ("triage",), "'triage'")
    offered = raw.get("offered")
    if not isinstance(offered, int) or isinstance(offered, bool) or offered < 1:
        c.problem(
            ("triage", "offered") if "offered" in raw else ("triage",),
            "'triage' needs 'offered': a whole number from 1",
        )


def _derived(c: _Checker, raw: dict[str, Any], where: Path_) -> list[HealthPlaybook]:
    """The health playbooks a ``{from: health-playbooks}`` list names (read once a load); each id the health
    check may continue into (TRIAGE_ORDER) must be one of them, else one problem per id missing."""
    c.unknown_keys(raw, grammar.names(grammar.DERIVED), where, "a derived list")
    if raw.get("from") != grammar.HEALTH_PLAYBOOKS:
        c.problem((*where, "from"), f"'from' names a list the loader fills: {grammar.HEALTH_PLAYBOOKS}")
        return []
    if c.health is None:
        c.health = health_playbooks(c.search)
    for pid in not_offered(c.health):
        c.problem(
            (*where, "from"),
            f"the health check continues into {pid!r} (TRIAGE_ORDER), but no playbook of that id on the search "
            "path declares 'triage' (its label and place in the list)",
        )
    return c.health


_BUILDERS = {"question": _question, "probe": _probe, "decision": _decision, "conclusion": _conclusion}


def _check_references(c: _Checker, nodes: dict[str, Node], node_where: dict[str, Path_]) -> None:
    """Every answers./facts./status. reference must name a real question, probe node and fact."""
    for node_id, node in nodes.items():
        where = node_where[node_id]
        for ref, at in _references(node):
            target = nodes.get(ref.node)
            if ref.root == "answers":
                if not isinstance(target, QuestionNode):
                    qs = [n for n, v in nodes.items() if isinstance(v, QuestionNode)]
                    c.problem((*where, *at), f"'answers.{ref.node}' names no question{_suggest(ref.node, qs)}")
            elif not isinstance(target, ProbeNode):
                ps = [n for n, v in nodes.items() if isinstance(v, ProbeNode)]
                c.problem((*where, *at), f"'{ref.root}.{ref.node}' names no probe node{_suggest(ref.node, ps)}")
            elif ref.root == "facts" and ref.fact is not None:
                spec = c.probes.get(target.probe)
                if spec is not None and spec.fact(ref.fact) is None:
                    c.problem(
                        (*where, *at),
                        f"probe {target.probe!r} (node {ref.node!r}) has no fact "
                        f"{ref.fact!r}{_suggest(ref.fact, [f.name for f in spec.facts])}; its facts: "
                        f"{', '.join(f.name for f in spec.facts)}",
                    )
        for at, holder in node.expressions():
            for problem in _typed(c, nodes, holder):
                c.problem((*where, *at), problem)


def _typed(c: _Checker, nodes: dict[str, Node], holder: Template | Expression) -> list[str]:
    """A condition that compares a fact with a value of another type, or asks ``in`` of a number."""

    def fact_type(node_id: str, fact: str) -> str | None:
        target = nodes.get(node_id)
        spec = c.probes.get(target.probe) if isinstance(target, ProbeNode) else None
        found = spec.fact(fact) if spec is not None else None
        return found.type if found is not None else None

    parts = holder.parts if isinstance(holder, Template) else (holder,)
    return [p for part in parts if isinstance(part, Expression) for p in type_problems(part, fact_type)]


def _references(node: Node) -> list[tuple[Reference, Path_]]:
    return [(r, at) for at, holder in node.expressions() for r in holder.references]


def _question_dead_end(c: _Checker, node: QuestionNode, where: Path_) -> None:
    if node.next_by_value and node.next is None:
        values = {"select": [ch.value for ch in node.choices], "confirm": [True, False]}.get(node.type, [])
        missing = [v for v in values if node.target(v) is None]
        if missing or node.type not in ("select", "confirm"):
            listed = ", ".join(map(repr, missing))
            c.problem(
                (*where, "next"),
                f"dead end: no 'next' for {verb(len(missing), 'the answer', 'the answers')} {listed}; "
                f"add {verb(len(missing), 'it', 'them')} or a '*' fallback"
                if missing
                else "dead end: no 'next' for any other answer; add a '*' fallback",
            )
    elif node.next is None:
        c.problem(where, f"dead end: question {node.id!r} has no 'next'")


def _dead_end(c: _Checker, node: Node, where: Path_) -> None:
    """A node that can be left some way the playbook does not say."""
    if isinstance(node, QuestionNode):
        _question_dead_end(c, node, where)
    elif isinstance(node, ProbeNode) and not node.next:
        unhandled = [o for o in OUTCOMES if o not in node.on]
        if unhandled:
            c.problem(
                where,
                f"dead end: probe node {node.id!r} handles no outcome {', '.join(unhandled)}; "
                "map them under 'on' or give a 'next' for the rest",
            )
    elif isinstance(node, DecisionNode) and not node.default:
        c.problem(where, f"dead end: decision {node.id!r} has no 'default' for when no branch matches")


def _check_graph(c: _Checker, pb_start: str, nodes: dict[str, Node], node_where: dict[str, Path_]) -> None:
    ids = list(nodes)
    edges: dict[str, list[str]] = {}
    for node_id, node in nodes.items():
        where = node_where[node_id]
        _dead_end(c, node, where)
        targets = [(edge.target, edge.at) for edge in node.edges()]
        for target, at in targets:
            if target not in nodes and target not in c.unfilled:
                c.problem((*where, *at), f"unknown node {target!r}{_suggest(target, ids)}")
        edges[node_id] = [t for t, _ in targets if t in nodes]
    if pb_start not in nodes:
        return
    seen = reachable([pb_start], lambda n: edges.get(n, []))
    for node_id in ids:
        if node_id not in seen:
            c.problem(node_where[node_id], f"node {node_id!r} is unreachable from the start node {pb_start!r}")
    # Cycles with no way out: nodes from which no conclusion can be reached (one walk backwards
    # from all the conclusions, so a chain of 20,000 nodes costs 20,000 steps, not 20,000 squared).
    backwards: dict[str, list[str]] = {}
    for n, outgoing in edges.items():
        for t in outgoing:
            backwards.setdefault(t, []).append(n)
    conclusions = [n for n, v in nodes.items() if isinstance(v, ConclusionNode)]
    can_finish = reachable(conclusions, lambda m: backwards.get(m, []))
    for n in ids:
        if n in seen and n not in can_finish and edges.get(n):
            c.problem(node_where[n], f"cycle with no way out: from {n!r} no path leads to a conclusion")


def _node(
    c: _Checker, raw: Any, where: Path_, *, step_ids: list[str], nodes: dict[str, Node], node_where: dict[str, Path_]
) -> Node | None:
    """One node, built by its kind's builder; None (with the problem noted) when it cannot be."""
    if not isinstance(raw, dict):
        c.problem(where, "each node must be a mapping with id and kind")
        return None
    node_id = c.text(raw, "id", where, "a node")
    if not node_id:
        return None
    if not ID_PATTERN.fullmatch(node_id):
        c.problem((*where, "id"), f"node id {node_id!r} must be snake_case (a-z, 0-9, _), so conditions can name it")
    if node_id in nodes:
        c.problem((*where, "id"), f"duplicate node id {node_id!r} (first at {c.at(node_where[node_id])})")
        return None
    kind = raw.get("kind")
    if kind not in KIND_KEYS:
        c.problem(
            (*where, "kind") if "kind" in raw else where,
            f"unknown node kind {kind!r}{_suggest(str(kind), list(KIND_KEYS))}; kinds: {', '.join(KIND_KEYS)}",
        )
        return None
    c.unknown_keys(raw, COMMON_KEYS + KIND_KEYS[kind], where, f"a {kind} node")
    step = raw.get("step")
    if step is not None and str(step) not in step_ids:
        c.problem(
            (*where, "step"),
            f"unknown step {step!r}{_suggest(str(step), step_ids)}; steps: {', '.join(step_ids) or 'none'}",
        )
    base = {
        "id": node_id,
        "kind": kind,
        "step": str(step) if step is not None else None,
        "explain": str(raw.get("explain", "") or ""),
        "line": c.doc.where(where)[0],
        "origin": c.files[c.file_of(where)] if c.file_of(where) else None,
    }
    return _BUILDERS[kind](c, raw, base, where)


def _nodes(c: _Checker, data: dict[str, Any], step_ids: list[str]) -> tuple[dict[str, Node], dict[str, Path_]]:
    raw_nodes = data.get("nodes")
    nodes: dict[str, Node] = {}
    node_where: dict[str, Path_] = {}
    if not isinstance(raw_nodes, list) or not raw_nodes:
        c.problem(
            ("nodes",) if "nodes" in data else (),
            "the playbook needs 'nodes': a list of question, probe, decision and conclusion nodes",
        )
        return nodes, node_where
    for raw, where in _expanded(c, raw_nodes, ("nodes",), {}, ()):
        node = _node(c, raw, where, step_ids=step_ids, nodes=nodes, node_where=node_where)
        if node is not None:
            nodes[node.id] = node
            node_where[node.id] = where
    return nodes, node_where


# -- fragments (``uses:``) ------------------------------------------------------------------------


def _expanded(
    c: _Checker, items: list[Any], at: Path_, given: Mapping[str, Any], chain: tuple[str, ...]
) -> Iterator[tuple[Any, Path_]]:
    """The nodes of a list in order, each ``uses:`` item replaced by its fragment's nodes (their ``$need``
    targets filled from ``with``), with the path of each in its own file's positions."""
    for i, raw in enumerate(items):
        where: Path_ = (*at, i)
        if isinstance(raw, dict) and "uses" in raw and "id" not in raw:
            yield from _used(c, raw, where, given, chain)
        else:
            yield (_bound(c, raw, where, given) if chain else raw), where


def _used(
    c: _Checker, raw: dict[str, Any], where: Path_, outer: Mapping[str, Any], chain: tuple[str, ...]
) -> Iterator[tuple[Any, Path_]]:
    c.unknown_keys(raw, USES_KEYS, where, "a 'uses' item")
    name = raw["uses"]
    if not isinstance(name, str) or not PLAYBOOK_ID_PATTERN.fullmatch(name):
        shown = cut(repr(name), 80)  # a list of 200,000 strings made one line of 4 MB
        c.problem(
            (*where, "uses"), f"'uses' names a fragment by its id (lower-case letters, digits, '-', '_'), not {shown}"
        )
        return
    if len(name) > grammar.MAX_FRAGMENT_ID_CHARS:
        c.problem(
            (*where, "uses"),
            f"'uses' names a fragment by its id, at most {grammar.MAX_FRAGMENT_ID_CHARS} characters (its file's "
            f"name); this one has {len(name)}",
        )
        return
    if name in chain:
        c.problem((*where, "uses"), f"fragment {name!r} uses itself: {' -> '.join((*chain, name))}")
        return
    if len(chain) >= grammar.MAX_FRAGMENT_DEPTH:
        c.problem(
            (*where, "uses"),
            f"fragments nested deeper than {grammar.MAX_FRAGMENT_DEPTH}: {' -> '.join((*chain, name))}",
        )
        return
    if len(c.files) > grammar.MAX_FRAGMENTS:
        c.problem((*where, "uses"), f"more than {grammar.MAX_FRAGMENTS} fragments inserted into one playbook")
        return
    given = raw.get("with") or {}
    if not isinstance(given, dict):
        c.problem((*where, "with"), "'with' maps each of the fragment's needs to a node id")
        given = {}
    given = {str(k): _target(c, v, (*where, "with", k), outer) if chain else v for k, v in given.items()}
    n = _fragment(c, name, (*where, "uses"))
    if n is None:
        return
    data = c.fragment_data[n]
    needs = data.get("needs") or {}
    for key in given:
        if key not in needs:
            c.key_problem(
                (*where, "with", key),
                f"fragment {name!r} needs no {key!r}{_suggest(key, list(needs))}; "
                f"it needs: {', '.join(needs) or 'none'}",
            )
        elif not isinstance(given[key], str):
            c.problem((*where, "with", key), f"'with: {key}' must be a node id, not {type(given[key]).__name__}")
    for need, meaning in needs.items():
        if need not in given:
            c.problem(where, f"fragment {name!r} needs 'with: {{{need}: NODE}}': {meaning}")
    # a value already said to be wrong is bound to nothing: its problem is the playbook's, not the fragment's
    bound = {k: v if isinstance(v, str) else None for k, v in given.items() if k in needs} | {
        k: None for k in needs if k not in given
    }
    yield from _expanded(c, data["nodes"], (FRAGMENT, n, "nodes"), bound, (*chain, name))


def _fragment(c: _Checker, name: str, where: Path_) -> int | None:
    """Fragment ``name`` found in the first of ``fragment_dirs`` that holds it, read as a playbook is (safe
    YAML, bounded), its positions added under (FRAGMENT, n); n, or None with the problem noted."""
    found = _fragment_file(c, name, where)
    if found is None:
        return None
    try:
        with open(found, encoding="utf-8", newline="") as fh:  # characters, as the bound counts them
            text = fh.read(MAX_YAML_CHARS + 1 - c.fragment_chars)
    except (OSError, UnicodeDecodeError) as exc:
        c.problem(where, f"fragment {name!r} ({found}) cannot be read: {getattr(exc, 'strerror', None) or exc}")
        return None
    c.fragment_chars += len(text)
    n = len(c.files)
    c.files.append(str(found))
    prefix: Path_ = (FRAGMENT, n)
    c.doc.positions[prefix] = (1, 1)
    if c.fragment_chars > MAX_YAML_CHARS:
        c.problem(prefix, f"the fragments of one playbook are at most {MAX_YAML_CHARS} characters in all")
        return None
    try:
        located = load_located(text)
    except YamlSyntaxError as exc:
        c.problems.append((n, exc.line, exc.column, str(exc)))
        return None
    for path, position in located.positions.items():
        c.doc.positions[(*prefix, *path)] = position
    for parent, key, line, col in located.duplicates:
        c.problems.append(
            (n, line, col, f"duplicate key {key!r}" + (f" in {'/'.join(map(str, parent))}" if parent else ""))
        )
    if not _fragment_shape(c, name, located.data, prefix):
        return None
    c.fragment_data[n] = located.data
    return n


def _fragment_file(c: _Checker, name: str, where: Path_) -> Path | None:
    """The file of fragment ``name``: the first of ``fragment_dirs`` holding it, or None with the problem noted
    (the first on the path is there but no regular file, or none is)."""
    candidates = [d / f"{name}.yaml" for d in c.fragment_dirs]
    found = next((f for f in candidates if f.is_file()), None)
    there = next((f for f in candidates if os.path.lexists(f)), None)
    if there is not None and (found is None or candidates.index(there) < candidates.index(found)):
        # the first on the path is there but no regular file (/dev/zero, a FIFO, a broken link): never read
        what = "a link to nothing" if not there.exists() else "not a regular file"
        c.problem(where, f"fragment {name!r} ({there}) cannot be read: {what}")
        return None
    if found is None:
        known = sorted({f.stem for d in c.fragment_dirs if d.is_dir() for f in d.glob("*.yaml") if f.is_file()})
        c.problem(
            where,
            f"no fragment named {name!r}{_suggest(name, known)} in the search path's {grammar.FRAGMENT_DIR}/ "
            f"directories; fragments: {', '.join(known) or 'none'}",
        )
    return found


def _fragment_shape(c: _Checker, name: str, data: Any, prefix: Path_) -> bool:
    """Whether a fragment's document is one: a mapping naming itself, its needs snake_case names (left empty,
    with the problem noted, where they are not), and nodes."""
    if not isinstance(data, dict):
        c.problem(prefix, "a fragment is a mapping with fragment, needs and nodes")
        return False
    c.unknown_keys(data, FRAGMENT_KEYS, prefix, "a fragment")
    if data.get("fragment") != name:
        c.problem(
            (*prefix, "fragment") if "fragment" in data else prefix,
            f"a fragment names itself: 'fragment: {name}' (its file's name)",
        )
    needs = data.get("needs")
    if needs is not None and (
        not isinstance(needs, dict) or not all(isinstance(k, str) and NEED_NAME.fullmatch(k) for k in needs)
    ):
        c.problem(
            (*prefix, "needs"), "'needs' maps snake_case names to what each is (the using playbook's 'with' keys)"
        )
        data["needs"] = {}
    if not isinstance(data.get("nodes"), list) or not data["nodes"]:
        c.problem((*prefix, "nodes") if "nodes" in data else prefix, "a fragment needs 'nodes': a list of nodes")
        return False
    return True


def _target(c: _Checker, value: Any, where: Path_, given: Mapping[str, Any]) -> Any:
    """A target as the fragment wrote it: ``$need`` becomes the node the using playbook gave for it."""
    if not (isinstance(value, str) and value.startswith("$")):
        return value
    if value[1:] in given:
        if given[value[1:]] is None:  # a need not given, or given no node id: said at the 'uses', once
            c.unfilled.add(value)
            return value
        return given[value[1:]]
    listed = ", ".join(f"${k}" for k in given) or "none"
    c.problem(where, f"{value!r} is none of this fragment's needs ({listed}); declare it under 'needs'")
    return value


def _bound(c: _Checker, raw: Any, where: Path_, given: Mapping[str, Any]) -> Any:
    """A fragment's node with each ``$need`` in a target (next, on, goto, a decision's default) filled in."""
    if not isinstance(raw, dict):
        return raw
    out = dict(raw)
    nxt = raw.get("next")
    if isinstance(nxt, dict):
        out["next"] = {k: _target(c, v, (*where, "next", k), given) for k, v in nxt.items()}
    else:
        out["next"] = _target(c, nxt, (*where, "next"), given)
    if "next" not in raw:
        del out["next"]
    if isinstance(raw.get("on"), dict):
        out["on"] = {k: _target(c, v, (*where, "on", k), given) for k, v in raw["on"].items()}
    if raw.get("kind") == "decision":
        if "default" in raw:
            out["default"] = _target(c, raw["default"], (*where, "default"), given)
        if isinstance(raw.get("branches"), list):
            out["branches"] = [
                {**b, "goto": _target(c, b["goto"], (*where, "branches", i, "goto"), given)}
                if isinstance(b, dict) and "goto" in b
                else b
                for i, b in enumerate(raw["branches"])
            ]
    return out


def _document(
    path: str, text: str, probes: Mapping[str, ProbeInfo], search: Sequence[Path] = ()
) -> tuple[_Checker, dict[str, Any]]:
    """The parsed YAML as a mapping, with its duplicate keys noted as problems."""
    try:
        located = load_located(text)
    except YamlSyntaxError as exc:
        raise PlaybookError([f"{path}:{exc.line}:{exc.column}: {exc}"]) from None
    c = _Checker(path, located, probes, search)
    for parent, key, line, col in located.duplicates:
        c.problems.append(
            (0, line, col, f"duplicate key {key!r}" + (f" in {'/'.join(map(str, parent))}" if parent else ""))
        )
    if not isinstance(located.data, dict):
        raise PlaybookError([f"{path}:1:1: a playbook is a mapping with id, title, version, steps and nodes"])
    return c, located.data


def shipped_search() -> list[Path]:
    """The search path of a playbook loaded with none given: warpwizard's own playbooks (and their fragments)."""
    from wizard.playbook.places import packaged_dir

    return [packaged_dir()]


def load_playbook_text(
    text: str, path: str, probes: Mapping[str, ProbeInfo], *, search: Sequence[Path] | None = None
) -> Playbook:
    """Parse and validate; raise PlaybookError listing every problem. ``search``: the playbook search path's
    places, first match wins, where ``uses:`` finds fragments (their ``fragments/``) and a derived list its
    playbooks (discovery passes the whole search path; default: warpwizard's own)."""
    c, data = _document(path, text, probes, shipped_search() if search is None else search)
    c.unknown_keys(data, TOP_KEYS, (), "the playbook")
    pid = c.text(data, "id", (), "the playbook")
    if pid and not PLAYBOOK_ID_PATTERN.fullmatch(pid):
        c.problem(("id",), f"playbook id {pid!r} must be lower-case letters, digits, '-' or '_'")
    title = c.line(data, "title", (), "the playbook")
    version = c.text(data, "version", (), "the playbook")
    description = c.text(data, "description", (), "the playbook", False)
    _triage(c, data.get("triage"))
    steps = _steps(c, data.get("steps"))
    nodes, node_where = _nodes(c, data, [s.id for s in steps])
    start = str(data.get("start") or (next(iter(nodes)) if nodes else ""))
    if data.get("start") is not None and start not in nodes:
        c.problem(("start",), f"unknown start node {start!r}{_suggest(start, list(nodes))}")
    _check_references(c, nodes, node_where)
    _check_graph(c, start, nodes, node_where)
    if c.problems:
        raise PlaybookError(c.formatted())
    return Playbook(pid, title, description, version, steps, nodes, start, path, tuple(c.files[1:]))


# Keys whose values people read: a `#` comment after a plain scalar there cuts the sentence.
PROSE_KEYS = frozenset({"text", "prompt", "explain", "fix", "help", "evidence", "title", "description"})


def prose_warnings(path: str | Path) -> list[str]:
    """``file:line:column: warning: ...`` for each plain scalar in prose that a ``#`` comment cuts
    short (`` #325`` in an unquoted line is a YAML comment, not text). Only for a file that loads."""
    try:
        text = Path(path).read_text(encoding="utf-8")
        cut = comments_cutting_text(text, PROSE_KEYS)
    except (OSError, ValueError, YamlSyntaxError):
        return []  # loading reports these as problems
    return [
        f"{path}:{line}:{col}: warning: the {key!r} text ends here: ' #' starts a YAML comment, so what "
        "follows is not shown; put the text in quotes (or write '#' without the space before it)"
        for line, col, key in cut
    ]


def load_playbook(
    path: str | Path, probes: Mapping[str, ProbeInfo], *, search: Sequence[Path] | None = None
) -> Playbook:
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            raw = fh.read(MAX_YAML_CHARS + 1)
        text = raw.decode("utf-8")
    except FileNotFoundError:
        raise PlaybookError([f"{p}: no such file"]) from None
    except UnicodeDecodeError as exc:
        raise PlaybookError([f"{p}: not UTF-8 text (byte {exc.start})"]) from None
    except (OSError, ValueError) as exc:
        raise PlaybookError([f"{p}: cannot read ({getattr(exc, 'strerror', None) or exc})"]) from None
    return load_playbook_text(text, str(p), probes, search=search)
