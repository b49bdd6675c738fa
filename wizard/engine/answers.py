"""Answers: validation shared by every source, and the non-interactive sources.

``QuestionNode.coerce`` (the playbook model's own rule) checks every value, whatever its source.
Each
answer keeps its origin: what a person typed or confirmed at the terminal, or gave on the
command line, may name a program to run; what came from a file or a playbook default may
not, without ``--allow-commands`` (docs/security.md).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import yaml

from wizard.errors import AnswersError
from wizard.playbook.model import AnswerInvalid, Playbook, QuestionNode
from wizard.playbook.yaml_source import MAX_DEPTH, BoundedLoader, YamlSyntaxError, load_located
from wizard.untrusted import visible

ORIGIN_INTERACTIVE = "interactive"  # typed, chosen or confirmed by a person at the terminal
ORIGIN_COMMAND_LINE = "command line"  # --set
ORIGIN_FILE = "file"  # --answers
ORIGIN_DEFAULT = "default"  # --defaults: the playbook's default, seen by nobody
TRUSTED_ORIGINS = frozenset({ORIGIN_INTERACTIVE, ORIGIN_COMMAND_LINE})
MAX_ANSWERS_BYTES = 1 << 20
MAX_NESTING = MAX_DEPTH  # how deep answers (and a transcript's facts) may nest: as deep as YAML may


def too_deep(value: Any, limit: int = MAX_NESTING) -> bool:
    """Whether ``value`` nests lists and mappings deeper than ``limit``: counted without recursion, so
    data from a file or a caller (100,000 levels) is refused with a line instead of a RecursionError
    later, in a condition, a copy or the JSON writer."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list, tuple)):
            if depth > limit:
                return True
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


class MissingAnswer(Exception):
    def __init__(self, question: QuestionNode) -> None:
        super().__init__(question.id)
        self.question = question


def missing_answer_message(
    pb: Playbook, missing: QuestionNode, answered: set[str], hint: str, defaults_hint: str = ""
) -> str:
    """Name the missing question, and the unanswered ones that may follow it; then ``hint``, how
    the caller gives answers (a command line's options, or a function's arguments), and
    ``defaults_hint`` only where the question has a default to take (else it has none to offer)."""
    ahead = pb.reachable_from(missing.id) - {missing.id} - answered
    later = [n.id for n in pb.nodes.values() if isinstance(n, QuestionNode) and n.id in ahead]
    default = f" (default: {missing.default!r})" if missing.default is not None else ""
    text = f"missing answer for question {missing.id!r}{default}"
    if later:
        text += f"; depending on the answers, these may follow: {', '.join(later)}"
    if missing.default is None:
        return f"{text}; it has no default: {hint}"
    return f"{text}; {hint}" + (f", or {defaults_hint}" if defaults_hint else "")


class AnswerSource(Protocol):
    """Where answers come from: a person, a file, defaults."""

    def answer(self, question: QuestionNode, prompt: str) -> tuple[Any, str]:
        """Return (value, origin) with origin one of interactive, file, default; or raise MissingAnswer."""
        ...

    def confirm(self, question: QuestionNode, value: Any, what: str) -> bool:
        """Whether a person confirms that ``value`` (an answer from a file naming a program, ``what``)
        may run; a source with nobody to ask says no.

        A source may also have ``workload(probe, summary, check) -> str | None``: the command that runs
        the user's workload, asked once when a probe needs one and nothing gave it (``check`` says what
        is wrong with a typed command, or None); and ``confirm_program(node, value, what, why) -> bool |
        None``: whether a person who was shown a program that probe results chose lets it run (None:
        nobody to show it to). Optional, so sources written before them still work."""
        ...


@dataclass(frozen=True, slots=True)
class Answer:
    """One given answer and where it came from: ``origin`` (interactive, command line, file, default) decides
    whether a program the answer names may run, and the transcript records it beside the value."""

    value: Any
    origin: str


def answers_of(values: Mapping[str, Any], origin: str) -> dict[str, Answer]:
    """Values that came from one place, each as its record."""
    return {key: Answer(value, origin) for key, value in values.items()}


def values_of(given: Mapping[str, Answer]) -> dict[str, Any]:
    """The values alone (what a condition, a check or an answers file reads)."""
    return {key: answer.value for key, answer in given.items()}


class MappingAnswers:
    """Given answers (a file's, ``--set``'s: each with its origin); ``use_defaults`` fills the rest from defaults.

    ``MappingAnswers(values, origin=...)``: values of one origin; ``MappingAnswers.of(given)``: records.
    """

    def __init__(
        self,
        values: Mapping[str, Any],
        *,
        use_defaults: bool = False,
        origin: str = ORIGIN_FILE,
        spell: Callable[[str], str] = str,
    ) -> None:
        self.spell = spell  # names an option as the caller knows it: --set on a command line, sets= in Python
        self.given = answers_of(values, origin)
        self.use_defaults = use_defaults
        self.used: set[str] = set()

    @classmethod
    def of(
        cls, given: Mapping[str, Answer], *, use_defaults: bool = False, spell: Callable[[str], str] = str
    ) -> MappingAnswers:
        """A source answering with ``given`` (each answer with its own origin)."""
        source = cls({}, use_defaults=use_defaults, spell=spell)
        source.given.update(given)
        return source

    def answer(self, question: QuestionNode, prompt: str) -> tuple[Any, str]:
        if question.id in self.given:
            self.used.add(question.id)
            given = self.given[question.id]
            try:
                return question.coerce(given.value), given.origin
            except AnswerInvalid as exc:
                raise AnswersError([f"answer for {question.id!r} ({prompt}): {exc}"]) from None
        if self.use_defaults and question.default is not None:
            try:  # the default meets the same rules as a given answer (a path must exist)
                return question.coerce(question.default), ORIGIN_DEFAULT
            except AnswerInvalid as exc:
                raise AnswersError(
                    [
                        f"default for {question.id!r} ({prompt}): {exc}; "
                        f"answer it with {self.spell('sets')} {question.id}=VALUE"
                    ]
                ) from None
        raise MissingAnswer(question)

    def confirm(self, question: QuestionNode, value: Any, what: str) -> bool:
        """Nobody to ask: a file alone never decides what runs."""
        return False


def check_answers(playbook: Playbook, values: Mapping[str, Any]) -> list[str]:
    """Every problem with the given answers, before anything runs: unknown ids, bad values."""
    import difflib

    questions = {q.id: q for q in playbook.questions()}
    problems: list[str] = []
    for key, value in values.items():
        if not isinstance(key, str):
            problems.append(f"question id {visible(repr(key))[:80]}: expected text, not {type(key).__name__}")
            continue
        if too_deep(value):
            problems.append(f"answer for {visible(key)[:80]!r}: nested deeper than {MAX_NESTING} levels")
            continue
        q = questions.get(key)
        if q is None:
            close = difflib.get_close_matches(key, list(questions), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            asks = f"asks: {', '.join(questions)}" if questions else "asks no question"
            problems.append(f"unknown question id {key!r}{hint}; playbook {playbook.id!r} {asks}")
            continue
        try:
            q.coerce(value)
        except AnswerInvalid as exc:
            prompt = q.prompt.source if q.prompt is not None else q.id
            problems.append(f"answer for {key!r} ({prompt}): {exc}")
    return problems


_NOFOLLOW = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _read_answers_text(path: str, stdin: Any, nofollow: bool = False) -> str:
    try:
        if path == "-":
            text = str(stdin.read(MAX_ANSWERS_BYTES + 1))
        else:
            fd = os.open(path, _NOFOLLOW) if nofollow else None  # a saved session is never a link
            with open(path if fd is None else fd, "rb") as fh:
                text = fh.read(MAX_ANSWERS_BYTES + 1).decode("utf-8")
    except FileNotFoundError:
        raise AnswersError([f"{path}: no such answers file"]) from None
    except IsADirectoryError:
        raise AnswersError([f"{path}: is a directory, not an answers file"]) from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise AnswersError([f"{path}: cannot read answers ({getattr(exc, 'strerror', None) or exc})"]) from None
    if len(text) > MAX_ANSWERS_BYTES:
        raise AnswersError([f"{path}: too large for an answers file (over {MAX_ANSWERS_BYTES} bytes)"])
    return text


def _json_answers(text: str, name: str) -> Any:
    duplicates: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                duplicates.append(key)
            out[key] = value
        return out

    try:
        data = json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError as exc:
        raise AnswersError([f"{name}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg})"]) from None
    except (RecursionError, ValueError) as exc:  # ValueError: a number of more than 4,300 digits
        raise AnswersError([f"{name}: not usable as answers ({type(exc).__name__})"]) from None
    if duplicates:
        raise AnswersError([f"{name}: duplicate key {duplicates[0]!r}: each question is answered once"])
    return data


def _yaml_answers(text: str, name: str) -> Any:
    try:
        located = load_located(text)
    except YamlSyntaxError as exc:
        raise AnswersError([f"{name}:{exc.line}:{exc.column}: not valid YAML/JSON ({exc})"]) from None
    if located.duplicates:
        _, key, line, col = located.duplicates[0]
        raise AnswersError([f"{name}:{line}:{col}: duplicate key {key!r}: each question is answered once"])
    return located.data


def load_answers_file(path: str, stdin: Any = None, *, nofollow: bool = False) -> dict[str, Any]:
    """Read answers (YAML or JSON, '-' for stdin): a mapping of question id to value. ``nofollow``: a
    symbolic link is refused, not followed (a saved session, found in the state directory)."""
    text = _read_answers_text(path, stdin if stdin is not None else sys.stdin, nofollow)
    name = "stdin" if path == "-" else path
    data = _json_answers(text, name) if path.endswith(".json") else _yaml_answers(text, name)
    if data is None:
        return {}
    if isinstance(data, dict) and isinstance(data.get("answers"), dict):
        data = data["answers"]  # a --record file, or a JSON transcript
    if not isinstance(data, dict):
        raise AnswersError([f"{name}: answers must be a mapping of question id to value, not {type(data).__name__}"])
    return {str(k): v for k, v in data.items()}


def parse_set_options(items: list[str], spell: Callable[[str], str] = str) -> dict[str, Any]:
    """``id=value`` pairs (``--set``, ``sets=``: ``spell`` names them); the value is read as YAML (so true,
    3, [a, b] work)."""
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise AnswersError([f"{spell('sets')} {item!r}: expected QUESTION=VALUE"])
        key, raw = item.split("=", 1)
        key = key.strip()
        if key in out:
            raise AnswersError([f"{spell('sets')} {key}: given twice; each question is answered once"])
        try:
            out[key] = yaml.load(raw, Loader=BoundedLoader) if raw.strip() else ""
        except yaml.YAMLError:
            out[key] = raw
    return out


def dump_answers(answers: Mapping[str, Any], playbook_id: str) -> str:
    """An answers file that ``--answers`` replays exactly."""
    header = (
        f"# warpwizard answers for playbook {playbook_id}; replay with: warpwizard run {playbook_id} --answers FILE\n"
    )
    return header + yaml.safe_dump(dict(answers), sort_keys=False, allow_unicode=True)


def template_text(text: object) -> str:
    """Playbook text (a title, a prompt, a label) as it goes into the answers template: one line, every
    run of whitespace (line breaks of every kind included) one space, controls escaped. The one rule
    for all of them: text that started a line of its own would be YAML the template's reader obeys."""
    return visible(" ".join(str(text).split()))


def continued_steps(first: Playbook, later: Sequence[Playbook]) -> dict[str, str]:
    """Where each question of a playbook the run may continue into is asked, by its id: that playbook's step (a
    template listed them as "asked in no step", 20 of the triage's). A question the first playbook has is its."""
    where: dict[str, str] = {}
    for pb in later:
        steps = {step.id: f"step {n} ({step.title})" for n, step in enumerate(pb.steps, 1)}
        for node_id, node in pb.nodes.items():
            if node_id not in first.nodes and node_id not in where:
                step = steps.get(node.step or "")
                where[node_id] = f"the {pb.id} playbook, where the run may continue" + (f": its {step}" if step else "")
    return where


def answers_template(
    playbook: Playbook, programs: frozenset[str] = frozenset(), elsewhere: Mapping[str, str] | None = None
) -> str:
    """A commented answers file to fill in: every question's id, prompt, type and choices, its default
    and the step that asks it. A template asks, it does not answer: every question is commented out (with its
    default, if any, to uncomment), so a question the user did not fill in is asked at the terminal, or takes
    its default only under ``--defaults``; a filled-in default answered the triage's questions silently
    (issue 44 item 7). ``programs`` (questions whose answer names a program to run) say so; ``elsewhere`` says
    where a question of a playbook the run may continue into is asked (``continued_steps``)."""
    titles = {step.id: f"step {n} ({step.title})" for n, step in enumerate(playbook.steps, 1)}
    out = [
        f"# warpwizard answers for playbook {template_text(playbook.id)} ({template_text(playbook.title)})",
        f"# run: warpwizard run {template_text(playbook.id)} --answers THIS_FILE "
        "(relative paths are relative to this file)",
        "# every answer is commented out: uncomment and fill in the ones you know; a question left out is",
        "# asked at the terminal, or takes its default with --defaults",
        "",
    ]
    for q in playbook.questions():
        where = (elsewhere or {}).get(q.id) or titles.get(q.step or "", "no step")
        out += _template_entry(q, where, q.id in programs)
    return "\n".join(out)


def _readable(template: Any) -> str:
    """A prompt as a person reads it before the run: each ``{{ facts.inspect.worst_kernel }}`` hole
    becomes ``<the worst kernel>`` (what the run will put there), never the raw expression."""
    from wizard.playbook.conditions import Expression

    out = []
    for part in template.parts:
        if isinstance(part, Expression):
            last = part.references[-1] if part.references else None
            name = (last.fact or last.node) if last is not None else "value"
            out.append(f"<the {name.replace('_', ' ')}>")
        else:
            out.append(part)
    return "".join(out)


def _template_entry(q: QuestionNode, step: str, names_program: bool) -> list[str]:
    prompt = _readable(q.prompt) if q.prompt is not None else q.id
    lines = [f"# {template_text(prompt)}"]
    if q.help:
        lines.append(f"#   {template_text(q.help)}")
    kind = q.type + (": " + " | ".join(f"{c.value} ({c.label})" for c in q.choices) if q.choices else "")
    lines += [f"#   type {template_text(kind)}", f"#   asked in {template_text(step)}"]
    if names_program:
        lines.append("#   names a program: it runs only with --allow-commands, or when you confirm it at the prompt")
    entry = yaml.safe_dump({q.id: q.default}, default_flow_style=True, allow_unicode=True, width=10**6).strip()[1:-1]
    if len(entry.splitlines()) != 1:  # a default with a line break: JSON (which YAML reads) escapes it
        from wizard.serialize import dumps

        entry = f"{q.id}: {dumps(q.default, indent=None)}"
    if q.default is None:
        lines.append(f"# {q.id}:")
    else:
        lines.append(f"# {template_text(entry)}   # the default")
    return [*lines, ""]
