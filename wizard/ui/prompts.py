"""Questions at a real terminal, through questionary; validated by the engine's own rules."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from wizard.engine.answers import AnswerInvalid, MappingAnswers, MissingAnswer, coerce_answer
from wizard.errors import NoTerminalError
from wizard.playbook.model import QuestionNode


def _validator(question: QuestionNode) -> Any:
    def check(text: str) -> bool | str:
        if text == "" and question.default is not None:
            return True
        try:
            coerce_answer(question, text)
        except AnswerInvalid as exc:
            return str(exc)
        return True

    return check


class InteractiveAnswers:
    """Asks a person; answers given with --set are taken first, without asking."""

    def __init__(self, preset: Mapping[str, Any] | None = None, help_printer: Any = None) -> None:
        self.preset = MappingAnswers(preset or {}, origin="command line")
        self.help_printer = help_printer

    def answer(self, question: QuestionNode, prompt: str) -> tuple[Any, str]:
        try:
            return self.preset.answer(question, prompt)
        except MissingAnswer:
            pass
        if not sys.stdin.isatty():
            raise NoTerminalError(
                f"question {question.id!r} ({prompt}) needs an answer, but stdin is not a terminal; run without "
                f"prompts with --answers FILE, --set {question.id}=VALUE or --defaults"
            )
        import questionary

        instruction = question.help or None
        if question.type == "confirm":
            yes = bool(question.default) if question.default is not None else True
            value = questionary.confirm(prompt, default=yes, instruction=instruction).unsafe_ask()
        elif question.type == "select":
            choices = [questionary.Choice(title=c.label, value=c.value) for c in question.choices]
            selected = next((c for c in choices if c.value == question.default), None)
            value = questionary.select(prompt, choices=choices, default=selected, instruction=instruction).unsafe_ask()
        else:
            # The default is shown, not pre-filled: typing a path must not append to it.
            shown = prompt if question.default is None else f"{prompt} [default: {question.default}]"
            if question.type == "path":  # questionary.path takes no instruction: fold help into the message
                shown = f"{shown} ({question.help})" if question.help else shown
                value = questionary.path(shown, validate=_validator(question)).unsafe_ask()
            else:
                value = questionary.text(shown, validate=_validator(question), instruction=instruction).unsafe_ask()
        if value == "" and question.default is not None:
            return question.default, "default"
        return coerce_answer(question, value), "interactive"
