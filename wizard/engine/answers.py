"""Answers: validation shared by every source, and the non-interactive sources.

The same ``coerce_answer`` checks a value typed at the terminal, read from an answers
file, given with ``--set`` or taken from a default, so a run replays identically.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

import yaml

from wizard.errors import AnswersError
from wizard.playbook.model import Playbook, QuestionNode

_TRUE = {"y", "yes", "true", "1", "on"}
_FALSE = {"n", "no", "false", "0", "off"}


class AnswerInvalid(ValueError):
    """The value does not fit the question; the message names what is valid."""


class MissingAnswer(Exception):
    def __init__(self, question: QuestionNode) -> None:
        super().__init__(question.id)
        self.question = question


def coerce_answer(q: QuestionNode, value: Any, *, check_exists: bool = True) -> Any:
    """Turn a raw value into the question's type, or raise AnswerInvalid."""
    if q.type == "confirm":
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise AnswerInvalid(f"{value!r} is not yes/no (true/false)")
    if q.type == "select":
        for choice in q.choices:
            if choice.value == value or (isinstance(choice.value, str) and str(value).lower() == choice.value.lower()):
                return choice.value
        valid = ", ".join(repr(c.value) for c in q.choices)
        raise AnswerInvalid(f"{value!r} is not one of the choices: {valid}")
    if q.type == "number":
        if isinstance(value, bool):
            raise AnswerInvalid(f"{value!r} is not a number")
        try:
            number = float(value) if not isinstance(value, (int, float)) else value
        except (TypeError, ValueError):
            raise AnswerInvalid(f"{value!r} is not a number") from None
        if isinstance(number, float) and number.is_integer() and not isinstance(value, float):
            number = int(number)
        v = q.validation
        if v.minimum is not None and number < v.minimum:
            raise AnswerInvalid(f"{number} is below the minimum {v.minimum:g}")
        if v.maximum is not None and number > v.maximum:
            raise AnswerInvalid(f"{number} is above the maximum {v.maximum:g}")
        return number
    if value is None or isinstance(value, (dict, list)):
        raise AnswerInvalid(f"{value!r} is not text")
    text = str(value)
    if q.validation.pattern and not re.fullmatch(q.validation.pattern, text):
        raise AnswerInvalid(f"{text!r} does not match the pattern {q.validation.pattern!r}")
    if q.type == "path" and check_exists and q.validation.must_exist and text and not Path(text).expanduser().exists():
        raise AnswerInvalid(f"{text!r} does not exist")
    return text


class AnswerSource(Protocol):
    """Where answers come from: a person, a file, defaults."""

    def answer(self, question: QuestionNode, prompt: str) -> tuple[Any, str]:
        """Return (value, origin) with origin one of interactive, file, default; or raise MissingAnswer."""
        ...


class MappingAnswers:
    """Answers from a file or ``--set``; ``use_defaults`` fills the rest from defaults."""

    def __init__(self, values: Mapping[str, Any], *, use_defaults: bool = False, origin: str = "file") -> None:
        self.values = dict(values)
        self.use_defaults = use_defaults
        self.origin = origin
        self.used: set[str] = set()

    def answer(self, question: QuestionNode, prompt: str) -> tuple[Any, str]:
        if question.id in self.values:
            self.used.add(question.id)
            try:
                return coerce_answer(question, self.values[question.id]), self.origin
            except AnswerInvalid as exc:
                raise AnswersError([f"answer for {question.id!r} ({prompt}): {exc}"]) from None
        if self.use_defaults and question.default is not None:
            return question.default, "default"
        raise MissingAnswer(question)


def check_answers(playbook: Playbook, values: Mapping[str, Any]) -> list[str]:
    """Every problem with the given answers, before anything runs: unknown ids, bad values."""
    import difflib

    questions = {q.id: q for q in playbook.questions()}
    problems: list[str] = []
    for key, value in values.items():
        q = questions.get(key)
        if q is None:
            close = difflib.get_close_matches(key, list(questions), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            problems.append(f"unknown question id {key!r}{hint}; playbook {playbook.id!r} asks: {', '.join(questions)}")
            continue
        try:
            coerce_answer(q, value)
        except AnswerInvalid as exc:
            prompt = q.prompt.source if q.prompt is not None else q.id
            problems.append(f"answer for {key!r} ({prompt}): {exc}")
    return problems


def load_answers_file(path: str) -> dict[str, Any]:
    """Read answers (YAML or JSON, '-' for stdin): a mapping of question id to value."""
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise AnswersError([f"{path}: no such answers file"]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise AnswersError([f"{path}: cannot read answers ({exc})"]) from None
    name = "stdin" if path == "-" else path
    try:
        data = json.loads(text) if path.endswith(".json") else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        mark = getattr(exc, "problem_mark", None)
        where = (
            f":{mark.line + 1}:{mark.column + 1}"
            if mark
            else (f":{exc.lineno}:{exc.colno}" if isinstance(exc, json.JSONDecodeError) else "")
        )
        reason = getattr(exc, "problem", None) or getattr(exc, "msg", None) or str(exc)
        raise AnswersError([f"{name}{where}: not valid YAML/JSON ({reason})"]) from None
    if data is None:
        return {}
    if isinstance(data, dict) and isinstance(data.get("answers"), dict):
        data = data["answers"]  # a --record file, or a JSON transcript
    if not isinstance(data, dict):
        raise AnswersError([f"{name}: answers must be a mapping of question id to value, not {type(data).__name__}"])
    return {str(k): v for k, v in data.items()}


def parse_set_options(items: list[str]) -> dict[str, Any]:
    """``--set id=value`` pairs; the value is read as YAML (so true, 3, [a, b] work)."""
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise AnswersError([f"--set {item!r}: expected QUESTION=VALUE"])
        key, raw = item.split("=", 1)
        try:
            out[key.strip()] = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            out[key.strip()] = raw
    return out


def dump_answers(answers: Mapping[str, Any], playbook_id: str) -> str:
    """An answers file that ``--answers`` replays exactly."""
    header = (
        f"# warpwizard answers for playbook {playbook_id}; replay with: warpwizard run {playbook_id} --answers FILE\n"
    )
    return header + yaml.safe_dump(dict(answers), sort_keys=False, allow_unicode=True)
