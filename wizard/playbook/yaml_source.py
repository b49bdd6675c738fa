"""YAML with positions: plain data plus the line and column of every value.

Built on PyYAML's safe composer and safe constructor (the same machinery as
``yaml.safe_load``), so no tag can construct an arbitrary object; keeping the node
marks is what lets every problem be reported as ``file:line:column``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import yaml

Path_ = tuple[str | int, ...]
PLAIN_TAGS = frozenset(f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "map", "seq"))


@dataclass
class Located:
    """The document as plain data, and where each path in it was written (1-based)."""

    data: Any
    positions: dict[Path_, tuple[int, int]] = field(default_factory=dict)
    duplicates: list[tuple[Path_, str, int, int]] = field(default_factory=list)

    def where(self, path: Path_) -> tuple[int, int]:
        while path not in self.positions and path:
            path = path[:-1]
        return self.positions.get(path, (1, 1))


class YamlSyntaxError(Exception):
    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.line = line
        self.column = column


MAX_YAML_CHARS = 4 << 20  # a playbook or an answers file is kilobytes; refuse what no person wrote
MAX_DEPTH = 64


class BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader without aliases and with a depth bound.

    An alias makes a document a graph: nine nested aliases expand to a billion values (84 s and
    5 GB before this loader). A deep document exhausts the stack. Neither belongs in a playbook
    or an answers file, so both are refused with the line and column.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(
                None, None, "aliases (*name) are not allowed: write the value out in full", mark
            )
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                raise yaml.composer.ComposerError(
                    None, None, f"exceeded maximum nesting depth ({MAX_DEPTH} levels)", mark
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


_FAST = getattr(yaml, "CSafeLoader", None) if getattr(yaml, "__with_libyaml__", False) else None


def _mark(event: Any) -> Any:
    return event.start_mark


def _compose(text: str) -> yaml.Node | None:
    """The node tree. With libyaml (PyYAML's C parser: 20 times faster, so a 20,000-node playbook
    loads in a second) the events are screened for aliases and depth first, then composed in C."""
    if _FAST is None:
        return yaml.compose(text, Loader=BoundedLoader)
    depth = 0
    for event in yaml.parse(text, Loader=_FAST):
        if isinstance(event, yaml.AliasEvent):
            raise yaml.composer.ComposerError(
                None, None, "aliases (*name) are not allowed: write the value out in full", _mark(event)
            )
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(
                    None, None, f"exceeded maximum nesting depth ({MAX_DEPTH} levels)", _mark(event)
                )
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
    return yaml.compose(text, Loader=_FAST)


def load_located(text: str) -> Located:
    """Parse one YAML document safely, keeping positions."""
    if len(text) > MAX_YAML_CHARS:
        raise YamlSyntaxError(f"too large ({len(text)} characters; at most {MAX_YAML_CHARS})", 1, 1)
    root = _parse(text)
    located = Located(None)
    if root is not None:
        located.data = _Builder(located).walk(root, ())
    return located


@functools.lru_cache(maxsize=4)
def _parse(text: str) -> yaml.Node | None:
    """The document's node tree; a YAML error becomes a YamlSyntaxError at its line and column.
    Remembered for the last few texts: loading, checking the chain and the comment warnings read the
    same playbook (a 20,000-node one was parsed three times); no caller changes a node."""
    try:
        return _compose(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        raise YamlSyntaxError(f"YAML syntax error: {exc.problem or exc.context}", line, col) from None
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(f"YAML error: {exc}", 1, 1) from None


def _at(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


class _Builder:
    """Plain data from a node tree, recording where each value and key stands."""

    def __init__(self, located: Located) -> None:
        self.located = located
        self.constructor = yaml.constructor.SafeConstructor()

    def walk(self, node: yaml.Node, path: Path_) -> Any:
        self.located.positions[path] = _at(node)
        if node.tag not in PLAIN_TAGS:
            tag = node.tag.replace("tag:yaml.org,2002:", "!!")
            raise YamlSyntaxError(
                f"YAML tag {tag} is not allowed: a playbook is plain data "
                "(mappings, lists, strings, numbers, booleans)",
                *_at(node),
            )
        if isinstance(node, yaml.MappingNode):
            return self.mapping(node, path)
        if isinstance(node, yaml.SequenceNode):
            return [self.walk(item, (*path, i)) for i, item in enumerate(node.value)]
        return self.scalar(node)

    def mapping(self, node: yaml.MappingNode, path: Path_) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = self.scalar(key_node)
            if isinstance(key, bool) and str(key_node.value).lower() in ("on", "off"):
                key = str(key_node.value).lower()  # YAML 1.1 reads `on:` as true; playbooks mean the word
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                key = str(key)
            if key in out:
                self.located.duplicates.append((path, str(key), *_at(key_node)))
            child = (*path, key if isinstance(key, (str, int)) else str(key))
            out[key] = self.walk(value_node, child)
            self.located.positions[(*child, "__key__")] = _at(key_node)
        return out

    def scalar(self, node: yaml.Node) -> Any:
        try:
            return self.constructor.construct_object(node, deep=True)
        except yaml.constructor.ConstructorError as exc:
            raise YamlSyntaxError(f"YAML error: {exc.problem}", *_at(node)) from None
        except (ValueError, OverflowError):  # a number of more than 4,300 digits, a date out of range
            raise YamlSyntaxError(
                f"YAML error: the value {str(node.value)[:20]!r}... cannot be read as a number or date", *_at(node)
            ) from None


def comments_cutting_text(text: str, keys: frozenset[str]) -> list[tuple[int, int, str]]:
    """(line, column, key) of each plain (unquoted) scalar under one of ``keys`` that a ``#`` comment
    follows on its line. YAML reads `` #325`` as a comment, so `fix: upgrade (issue #325)` says
    only "upgrade (issue": the author meant the text, and a warning says so."""
    root = _parse(text)
    lines = text.splitlines()
    found: list[tuple[int, int, str]] = []
    stack: list[tuple[yaml.Node, str | None]] = [(root, None)] if root is not None else []
    while stack:
        node, under = stack.pop()
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                key = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else None
                stack.append((value_node, key if key in keys else under))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, under) for item in node.value)
        elif under is not None and isinstance(node, yaml.ScalarNode) and not node.style:
            end = node.end_mark
            rest = lines[end.line][end.column :] if end.line < len(lines) else ""
            if rest[:1].isspace() and rest.lstrip().startswith("#"):
                found.append((end.line + 1, end.column + 1 + len(rest) - len(rest.lstrip()), under))
    return sorted(found)
