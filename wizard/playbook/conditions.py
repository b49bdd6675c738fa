"""The condition and template language: a small, safe subset of Python expressions.

Parsed once with ``ast`` and checked against a whitelist when a playbook loads; evaluated
by walking the tree here, never with ``eval``. Names are ``answers.<question>``,
``facts.<probe node>.<fact>`` and ``status.<probe node>``. A value that is not there
(a question not asked on this path, a probe that did not run) is ``None``, and any
comparison with ``None`` is false, so conditions never crash a run.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from wizard.formatting import plural, rounded

ROOTS = ("answers", "facts", "status")
# Playbooks come from other people: bound what an expression may be and may build.
MAX_EXPRESSION_CHARS = 4000
MAX_DEPTH = 40
MAX_INT = 10**18
MAX_VALUE_ITEMS = 100_000  # characters of a string, items of a list, built by + or *
MAX_INT_BITS = 256
# YAML authors write true/false/null; Python's True/False/None are constants already.
LITERAL_NAMES: dict[str, Any] = {"true": True, "false": False, "null": None, "none": None}
_TEMPLATE = re.compile(r"\{\{(.*?)\}\}", re.S)


class ExpressionError(Exception):
    """A syntax or whitelist error; ``column`` is 0-based within the expression."""

    def __init__(self, message: str, column: int = 0) -> None:
        super().__init__(message)
        self.column = column


def _join(items: Any, sep: str = ", ") -> str:
    if items is None:
        return ""
    if isinstance(items, (list, tuple, set)):
        return sep.join(str(i) for i in items)
    return str(items)


def _safe_len(value: Any) -> int:
    return len(value) if isinstance(value, (str, list, tuple, dict, set)) else 0


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "len": _safe_len,
    "join": _join,
    "lower": lambda s: str(s).lower() if s is not None else None,
    "upper": lambda s: str(s).upper() if s is not None else None,
    "str": lambda v: "" if v is None else str(v),
    "round": lambda v, n=0: round(v, n) if isinstance(v, (int, float)) else None,
    "fmt": rounded,
    "min": lambda *a: min(a) if all(isinstance(x, (int, float)) for x in a) else None,
    "max": lambda *a: max(a) if all(isinstance(x, (int, float)) for x in a) else None,
    "abs": lambda v: abs(v) if isinstance(v, (int, float)) else None,
    "first": lambda v: v[0] if isinstance(v, (list, tuple)) and v else None,
    "default": lambda v, d: d if v is None or v == "" else v,
    "plural": lambda n, noun: plural(n, str(noun)) if isinstance(n, (int, float)) and not isinstance(n, bool) else None,
    "dims": lambda v: "x".join(str(d) for d in v) if isinstance(v, (list, tuple)) else ("" if v is None else str(v)),
}

_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: b is not None and a in b,
    ast.NotIn: lambda a, b: b is None or a not in b,
}
_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Mod: operator.mod,
}


@dataclass(frozen=True, slots=True)
class Reference:
    """A name an expression reads: ``answers.q``, ``facts.node.fact`` or ``status.node``."""

    root: str
    node: str
    fact: str | None
    column: int


@dataclass(frozen=True)
class Expression:
    source: str
    tree: ast.Expression
    references: tuple[Reference, ...]

    def evaluate(self, scope: Mapping[str, Any]) -> Any:
        """Total over checked trees: an operation that does not apply gives None, never an error."""
        return _eval(self.tree.body, scope)

    def truth(self, scope: Mapping[str, Any]) -> bool:
        return bool(self.evaluate(scope))


def _chain(node: ast.AST) -> list[str] | None:
    parts: list[str] = []
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
        elif isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
            parts.append(node.slice.value)
        else:
            return None
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return list(reversed(parts))
    return None


class _Checker:
    """Walks an expression's tree and refuses anything outside the whitelist (one method per node
    type), collecting the names it reads."""

    def __init__(self) -> None:
        self.refs: list[Reference] = []

    def check(self, node: ast.AST, depth: int = 0) -> None:
        col = getattr(node, "col_offset", 0)
        if depth > MAX_DEPTH:
            raise ExpressionError(f"nested deeper than {MAX_DEPTH} levels", col)
        method = getattr(self, f"visit_{type(node).__name__}", None)  # ast.NodeVisitor's naming
        if method is None:
            raise ExpressionError(f"{type(node).__name__} is not allowed in a condition", col)
        for child in method(node, col):
            self.check(child, depth + 1)

    def visit_BoolOp(self, node: ast.BoolOp, col: int) -> list[ast.AST]:
        return list(node.values)

    def visit_UnaryOp(self, node: ast.UnaryOp, col: int) -> list[ast.AST]:
        if not isinstance(node.op, (ast.Not, ast.USub)):
            raise ExpressionError("only 'not' and unary minus are allowed", col)
        return [node.operand]

    def visit_Compare(self, node: ast.Compare, col: int) -> list[ast.AST]:
        for op in node.ops:
            if type(op) not in _COMPARE:
                raise ExpressionError(
                    f"comparison {type(op).__name__} is not allowed (use ==, !=, <, <=, >, >=, in, not in)", col
                )
        return [node.left, *node.comparators]

    def visit_BinOp(self, node: ast.BinOp, col: int) -> list[ast.AST]:
        if type(node.op) not in _BINARY:
            raise ExpressionError("only + - * / % are allowed", col)
        return [node.left, node.right]

    def visit_IfExp(self, node: ast.IfExp, col: int) -> list[ast.AST]:
        return [node.test, node.body, node.orelse]

    def visit_Constant(self, node: ast.Constant, col: int) -> list[ast.AST]:
        if not isinstance(node.value, (str, int, float, bool, type(None))):
            raise ExpressionError("only string, number, boolean and None literals are allowed", col)
        if isinstance(node.value, int) and not isinstance(node.value, bool) and abs(node.value) > MAX_INT:
            raise ExpressionError(f"integer literals are bounded (at most {MAX_INT})", col)
        return []

    def visit_List(self, node: ast.List, col: int) -> list[ast.AST]:
        return list(node.elts)

    def visit_Tuple(self, node: ast.Tuple, col: int) -> list[ast.AST]:
        return list(node.elts)

    def visit_Call(self, node: ast.Call, col: int) -> list[ast.AST]:
        allowed = ", ".join(sorted(FUNCTIONS))
        if not isinstance(node.func, ast.Name):
            raise ExpressionError(
                f"only plain function calls are allowed, not methods or expressions; functions: {allowed}", col
            )
        if node.func.id not in FUNCTIONS:
            raise ExpressionError(f"unknown function {node.func.id!r}; allowed: {allowed}", col)
        if node.keywords:
            raise ExpressionError("keyword arguments are not allowed", col)
        return list(node.args)

    def visit_Name(self, node: ast.Name, col: int) -> list[ast.AST]:
        return [] if node.id in LITERAL_NAMES else self._reference(node, col)

    def visit_Attribute(self, node: ast.Attribute, col: int) -> list[ast.AST]:
        return self._reference(node, col)

    def visit_Subscript(self, node: ast.Subscript, col: int) -> list[ast.AST]:
        return self._reference(node, col)

    def _reference(self, node: ast.AST, col: int) -> list[ast.AST]:
        chain = _chain(node)
        if chain is None:
            raise ExpressionError("subscripts must be string or attribute names", col)
        root = chain[0]
        if root not in ROOTS:
            raise ExpressionError(
                f"unknown name {root!r}; expressions read answers.<question>, "
                "facts.<probe node>.<fact> or status.<probe node>",
                col,
            )
        if len(chain) < 2:
            raise ExpressionError(f"'{root}' needs a node id, e.g. {root}.my_node", col)
        if root == "facts" and len(chain) < 3:
            raise ExpressionError("facts need a fact name: facts.<probe node>.<fact>", col)
        self.refs.append(Reference(root, chain[1], chain[2] if root == "facts" else None, col))
        return []


def parse(source: str) -> Expression:
    """Parse and whitelist-check one expression."""
    text = source.strip()
    if not text:
        raise ExpressionError("empty expression")
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ExpressionError(f"an expression of {len(text)} characters is too long (at most {MAX_EXPRESSION_CHARS})")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"syntax error: {exc.msg}", max((exc.offset or 1) - 1, 0)) from None
    except (RecursionError, MemoryError, ValueError) as exc:  # nesting the parser cannot hold; huge literals
        raise ExpressionError(f"cannot be parsed ({type(exc).__name__}: nested too deeply or too large)") from None
    checker = _Checker()
    checker.check(tree.body)
    return Expression(text, tree, tuple(checker.refs))


def _literal_kind(node: ast.AST) -> str | None:
    """What a literal in a condition is, in a fact type's words (``fact_matches``'s)."""
    if isinstance(node, ast.Constant):
        return {bool: "bool", int: "int", float: "float", str: "str", type(None): "None"}.get(type(node.value))
    if isinstance(node, (ast.List, ast.Tuple)):
        return "list"
    return None


def type_problems(expr: Expression, fact_type: Callable[[str, str], str | None]) -> list[str]:
    """Comparisons a fact's declared type makes meaningless, found when the playbook loads instead of a run
    silently taking the default branch: a bool fact compared with a string, ``in`` on a number.
    ``fact_type(node, fact)`` is the declared type (``FactSpec.type``), or None when unknown."""
    from wizard.probes.base import fact_kinds, fact_matches

    def declared(node: ast.AST) -> tuple[str, str] | None:
        chain = _chain(node)
        if chain is None or len(chain) != 3 or chain[0] != "facts":
            return None
        found = fact_type(chain[1], chain[2])
        return (f"facts.{chain[1]}.{chain[2]}", found) if found is not None else None

    problems = []
    for node in ast.walk(expr.tree):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        for op, left, right in zip(node.ops, operands, operands[1:], strict=False):
            if isinstance(op, (ast.In, ast.NotIn)):
                container = declared(right)
                if container and not fact_kinds(container[1]) & {"any", "list", "dict", "str"}:
                    problems.append(f"'in' on {container[0]}, which is {container[1]}, not a list, dict or string")
                continue
            for fact, other in ((declared(left), right), (declared(right), left)):
                kind = _literal_kind(other)
                if fact is None or kind in (None, "None") or "any" in fact_kinds(fact[1]):
                    continue
                kinds = fact_kinds(fact[1])
                fits = (
                    (kind in ("int", "float") and bool(kinds & {"int", "float"}))
                    or (kind == "list" and "list" in kinds)
                    or (isinstance(other, ast.Constant) and fact_matches(fact[1], other.value))
                )
                if not fits:
                    problems.append(
                        f"{fact[0]} is {fact[1]}: comparing it with {ast.unparse(other)} always gives the same answer"
                    )
    return problems


def _lookup(chain: list[str], scope: Mapping[str, Any]) -> Any:
    value: Any = scope.get(chain[0])
    for part in chain[1:]:
        if isinstance(value, Mapping):
            value = value.get(part)
        else:
            return None
    return value


def _bool_op(node: ast.BoolOp, scope: Mapping[str, Any]) -> Any:
    """``and``/``or`` as Python does them: the deciding operand, evaluated left to right, short-circuited."""
    stop_when = not isinstance(node.op, ast.And)  # 'and' stops at the first falsy, 'or' at the first truthy
    result: Any = not stop_when
    for value in node.values:
        result = _eval(value, scope)
        if bool(result) is stop_when:
            return result
    return result


def _unary(node: ast.UnaryOp, scope: Mapping[str, Any]) -> Any:
    operand = _eval(node.operand, scope)
    if isinstance(node.op, ast.Not):
        return not operand
    return -operand if isinstance(operand, (int, float)) else None


_NONE_SAFE = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)


def _compare(node: ast.Compare, scope: Mapping[str, Any]) -> bool:
    """A chain of comparisons; an ordering against a missing value (None) is simply false."""
    left = _eval(node.left, scope)
    for op, comparator in zip(node.ops, node.comparators, strict=True):
        right = _eval(comparator, scope)
        if (left is None or right is None) and not isinstance(op, _NONE_SAFE):
            return False
        try:
            if not _COMPARE[type(op)](left, right):
                return False
        except TypeError:
            return False
        left = right
    return True


def _call(node: ast.Call, scope: Mapping[str, Any]) -> Any:
    assert isinstance(node.func, ast.Name)
    try:
        return FUNCTIONS[node.func.id](*[_eval(a, scope) for a in node.args])
    except (TypeError, ValueError):
        return None


def _name(node: ast.AST, scope: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Name) and node.id in LITERAL_NAMES:
        return LITERAL_NAMES[node.id]
    chain = _chain(node)
    assert chain is not None
    return _lookup(chain, scope)


_EVALUATORS: dict[type[ast.AST], Callable[[Any, Mapping[str, Any]], Any]] = {
    ast.Constant: lambda node, scope: node.value,
    ast.Name: _name,
    ast.Attribute: _name,
    ast.Subscript: _name,
    ast.BoolOp: _bool_op,
    ast.UnaryOp: _unary,
    ast.Compare: _compare,
    ast.BinOp: lambda node, scope: _binary(type(node.op), _eval(node.left, scope), _eval(node.right, scope)),
    ast.IfExp: lambda node, scope: _eval(node.body, scope) if _eval(node.test, scope) else _eval(node.orelse, scope),
    ast.List: lambda node, scope: [_eval(e, scope) for e in node.elts],
    ast.Tuple: lambda node, scope: tuple(_eval(e, scope) for e in node.elts),
    ast.Call: _call,
}


def _eval(node: ast.AST, scope: Mapping[str, Any]) -> Any:
    evaluate = _EVALUATORS.get(type(node))
    if evaluate is None:  # the checker refused it already; a tree built by hand could still hold one
        raise ExpressionError(f"{type(node).__name__} is not allowed")
    return evaluate(node, scope)


def _size(value: Any) -> int:
    return len(value) if isinstance(value, (str, list, tuple)) else 0


def _binary(op: type[ast.operator], a: Any, b: Any) -> Any:
    """An arithmetic operator, or None where it does not apply or would build an unbounded value."""
    if a is None or b is None:
        return None
    if op is ast.Mod and isinstance(a, str):
        return None  # no printf-style formatting: '%2000000000d' % 1 would build 2 GB
    if op is ast.Mult:
        count = b if isinstance(a, (str, list, tuple)) else a if isinstance(b, (str, list, tuple)) else None
        if isinstance(count, int) and max(_size(a), _size(b)) * max(count, 0) > MAX_VALUE_ITEMS:
            return None
    if op is ast.Add and _size(a) + _size(b) > MAX_VALUE_ITEMS:
        return None
    try:
        result = _BINARY[op](a, b)
    except (TypeError, ZeroDivisionError, OverflowError, ValueError):
        return None
    if isinstance(result, int) and not isinstance(result, bool) and result.bit_length() > MAX_INT_BITS:
        return None
    return result


def _text(value: Any) -> str:
    """How a value reads inside a template's text."""
    try:
        if isinstance(value, float):
            return rounded(value)
        if isinstance(value, (list, tuple)):
            return _join(value)
        if isinstance(value, dict):  # "B: 4, E: 2", never Python's "{'B': 4}"
            return ", ".join(f"{_text(k)}: {_text(v)}" for k, v in value.items())
        return "" if value is None else str(value)
    except ValueError:  # an integer of more than 4300 digits (Python refuses to print it)
        return "<number too large to print>"


@dataclass(frozen=True)
class Template:
    """Text with ``{{ expression }}`` holes; a text that is one hole keeps its value's type."""

    source: str
    parts: tuple[str | Expression, ...]

    @property
    def references(self) -> tuple[Reference, ...]:
        return tuple(r for p in self.parts if isinstance(p, Expression) for r in p.references)

    @property
    def is_single_expression(self) -> bool:
        return len(self.parts) == 1 and isinstance(self.parts[0], Expression)

    def render(self, scope: Mapping[str, Any]) -> Any:
        if self.is_single_expression:
            expr = self.parts[0]
            assert isinstance(expr, Expression)
            return expr.evaluate(scope)
        return "".join(_hole(part, scope) if isinstance(part, Expression) else part for part in self.parts)


def _hole(expr: Expression, scope: Mapping[str, Any]) -> str:
    """A hole in a sentence: its value, or a visible marker where there is none (a sentence with a
    silent blank, "the kernel , your own code", reads as if nothing were missing)."""
    value = expr.evaluate(scope)
    return f"<unknown: {expr.source.strip()}>" if value is None else _text(value)


def parse_template(source: str) -> Template:
    parts: list[str | Expression] = []
    last = 0
    for match in _TEMPLATE.finditer(source):
        if match.start() > last:
            parts.append(source[last : match.start()])
        try:
            parts.append(parse(match.group(1)))
        except ExpressionError as exc:
            raise ExpressionError(str(exc), match.start() + 2 + exc.column) from None
        last = match.end()
    if last < len(source):
        parts.append(source[last:])
    if "{{" in source[last:]:
        raise ExpressionError("unclosed '{{'", source.index("{{", last))
    holes = [p for p in parts if isinstance(p, Expression)]
    if len(holes) == 1 and all(isinstance(p, Expression) or not p.strip() for p in parts):
        parts = list(holes)  # "  {{ x }} " is x itself, keeping its type, like "{{ x }}"
    return Template(source, tuple(parts))
