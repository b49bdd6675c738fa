"""Questions at a real terminal, through questionary; validated by the engine's own rules.

Three choices made after watching people use it: a yes/no question waits for Enter (a `y` that
also submitted would let the following Enter answer the next question with its default); a
rejected answer is explained on the line below the prompt, and asked again with the text kept
for editing (prompt_toolkit's own validation message sits on the terminal's bottom row, far from
the prompt); path completion never shows a traceback, whatever is typed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from wizard.engine.answers import ORIGIN_COMMAND_LINE, ORIGIN_INTERACTIVE, Answer, MappingAnswers, MissingAnswer
from wizard.errors import NoTerminalError
from wizard.formatting import plural, wrap_words
from wizard.playbook.model import AnswerInvalid, QuestionNode
from wizard.untrusted import rich_text, visible


def _safe_path_completer() -> Any:
    from prompt_toolkit.completion import Completer
    from questionary.prompts.path import GreatUXPathCompleter

    class SafePathCompleter(Completer):
        """Completion over what the person typed; a name too long or unreadable completes nothing."""

        def __init__(self) -> None:
            self.inner = GreatUXPathCompleter(expanduser=True)

        def get_completions(self, document: Any, complete_event: Any) -> Iterable[Any]:
            try:
                yield from self.inner.get_completions(document, complete_event)
            except (OSError, ValueError):
                return

    return SafePathCompleter()


class InteractiveAnswers:
    """Asks a person; answers given with --set are taken first, without asking."""

    def __init__(
        self,
        preset: Mapping[str, Answer] | None = None,
        *,
        console: Any = None,
        interactive: bool = True,
        ask_workload: bool = True,
        came_from: str = "given in a file",
    ) -> None:
        self.preset = MappingAnswers.of(preset or {})  # each given answer with where it came from
        self.console = console
        # How the file's answers came, in the words of the reused line: an answers file and a resumed
        # session are both files to the engine, not to the person who typed the command.
        self.came_from = came_from
        self.interactive = interactive
        # An answers file that gives no workload means none: asked only in a run without one.
        self.ask_workload = ask_workload

    def confirm(self, question: QuestionNode, value: Any, what: str) -> bool:
        """Ask the person whether a program from a file (a saved session, an answers file) may run:
        their yes makes it their own decision. No terminal: no."""
        if not self.interactive:
            return False
        return self._ask_to_run(f"  {question.id} comes from a file: {visible(value)}", what, value)

    def confirm_program(self, node: str, value: Any, what: str, why: str) -> bool | None:
        """Show a program that probe results chose (they come from traces and transcripts, which anyone can
        forge) and ask whether it may run, with or without --allow-commands. No terminal: None (nobody to
        show it to; then only --allow-commands lets it run)."""
        if not self.interactive:
            return None
        return self._ask_to_run(f"  {node}: {what} {visible(value)} is {why}", what, value)

    def _ask_to_run(self, where_from: str, what: str, value: Any) -> bool:
        """Say where a program came from, then ask whether it may run (no by default: Enter refuses)."""
        import questionary

        if self.console is not None:
            self.console.print(rich_text(where_from, "yellow"))
        prompt = f"Run {what} {visible(value)!r}?"
        return bool(questionary.confirm(prompt, default=False, auto_enter=False).unsafe_ask())

    def workload(self, probe: str, summary: str, check: Callable[[str], str | None]) -> str | None:
        """Ask for the command that runs the workload, once, when a step needs it; Enter skips the step."""
        if not (self.interactive and self.ask_workload):
            return None
        import questionary

        if self.console is not None:
            self.console.print(rich_text(f"  {probe} needs your workload: {summary}", "yellow"))
        typed = ""
        while True:
            text = str(
                questionary.text(
                    self._wrapped(
                        "Which command runs your workload? (e.g. python train.py --steps 3; Enter skips the "
                        "steps that need it)",
                        room=20,
                    ),
                    default=typed,
                ).unsafe_ask()
            ).strip()
            problem = check(text) if text else None
            if problem is None:
                return text or None
            if self.console is not None:
                self.console.print(rich_text(f"  ✗ {problem}; try again", "red"))
            typed = text

    def answer(self, question: QuestionNode, prompt: str) -> tuple[Any, str]:
        try:
            value, origin = self.preset.answer(question, prompt)
        except MissingAnswer:
            pass
        else:
            if self.console is not None:  # said, so a resumed step's header is not left empty
                where = "given with --set" if origin == ORIGIN_COMMAND_LINE else self.came_from
                shown = next((c.label for c in question.choices if c.value == value), value)
                shown = ("yes" if shown else "no") if isinstance(shown, bool) else shown
                line = f"✓ {visible(prompt)} {visible(str(shown))}  ({visible(where)})"
                from wizard.ui.render import indented

                indented(self.console, line, 2, "dim")
            return value, origin
        if not self.interactive:
            raise NoTerminalError(
                f"question {question.id!r} ({visible(prompt)}) needs an answer, but stdin is not a terminal; run "
                f"without prompts with --answers FILE, --set {question.id}=VALUE or --defaults"
            )
        typed = ""
        while True:
            value = self._ask(question, visible(prompt), typed)
            if value == "" and question.default is not None:
                return question.default, ORIGIN_INTERACTIVE  # shown and accepted with Enter
            try:
                return question.coerce(value), ORIGIN_INTERACTIVE
            except AnswerInvalid as exc:
                if self.console is not None:
                    self.console.print(rich_text(f"  ✗ {exc}; try again", "red"))
                typed = value if isinstance(value, str) else ""

    def _ask(self, question: QuestionNode, prompt: str, typed: str) -> Any:
        import questionary

        if question.help and not typed and self.console is not None:
            # Said above the prompt, wrapped at word boundaries by rich: as questionary's instruction it would
            # replace the (Y/n) hint and wrap mid-word on one long line.
            from rich.padding import Padding

            self.console.print(Padding(rich_text(visible(question.help), "dim"), (0, 0, 0, 2)))
        if question.type == "confirm":
            yes = bool(question.default)  # the loader gives every confirm a default (yes when unwritten)
            shown = self._wrapped(prompt, room=8)
            return self._echoed(
                questionary.confirm(shown, default=yes, auto_enter=False), prompt, lambda v: "Yes" if v else "No"
            )
        if question.type == "select":
            # a label broken between words under its own start (the terminal cut one at 80 columns: "... or p")
            choices = [
                questionary.Choice(
                    title="\n".join(wrap_words(visible(c.label), self._width() - 4, hang="     ")), value=c.value
                )
                for c in question.choices
            ]
            selected = next((c for c in choices if c.value == question.default), None)
            shown = self._wrapped(prompt, room=20)
            labels = {c.value: c.label for c in question.choices}
            return self._echoed(
                questionary.select(shown, choices=choices, default=selected),
                prompt,
                lambda v: visible(labels.get(v, str(v))),
            )
        # The default is shown, not pre-filled: typing a path must not append to it.
        shown = prompt if question.default is None else f"{prompt} [default: {visible(question.default)}]"
        shown = self._wrapped(shown, room=20)
        echo = f"{prompt} [default: {visible(question.default)}]" if question.default is not None else prompt
        if question.type == "path":
            path = submit_from_menu(questionary.path(shown, default=typed, completer=_safe_path_completer()))
            return self._echoed(path, echo, lambda v: visible(str(v)))
        return self._echoed(questionary.text(shown, default=typed), echo, lambda v: visible(str(v)))

    def _echoed(self, asked: Any, prompt: str, said: Callable[[Any], str]) -> Any:
        """Ask; then questionary's own echo of the answer is erased and the question and its answer are said
        again, broken between words at the terminal's width (the echo is one long line the terminal broke
        mid-word: "...or the tot" / "al kernel time")."""
        if self.console is None:
            return asked.unsafe_ask()
        asked.application.erase_when_done = True
        value = asked.unsafe_ask()
        for line in wrap_words(f"? {prompt} {said(value)}", self._width() - 1, hang="  "):
            self.console.print(rich_text(line), soft_wrap=True)
        return value

    def _wrapped(self, prompt: str, room: int) -> str:
        """The prompt broken at spaces to the terminal's width ("? " before it, ``room`` columns kept on its
        last line for the hint and the first typed characters): a terminal breaks a long line mid-word."""
        return "\n".join(wrap_words(prompt, self._width() - 3, hang="  ", room=room)) or prompt

    def _width(self) -> int:
        return getattr(self.console, "width", 0) or 80


def submit_from_menu(question: Any) -> Any:
    """Enter submits what the path prompt shows, the menu's highlighted completion included (questionary's
    Enter only closed an open completion menu, and the menu opens as one types, so a second Enter was
    needed); '/' or Tab still go into a directory."""
    import os

    from prompt_toolkit.key_binding import KeyBindings, merge_key_bindings
    from prompt_toolkit.keys import Keys

    own = KeyBindings()

    @own.add(Keys.ControlM, eager=True)
    def _enter(event: Any) -> None:
        buffer = event.current_buffer
        buffer.complete_state = None  # the highlighted completion is already in the text
        if buffer.validate(set_cursor=True):
            text = buffer.document.text
            event.app.exit(result=text[:-1] if text.endswith(os.sep) and len(text) > 1 else text)
            buffer.append_to_history()

    app = question.application
    app.key_bindings = merge_key_bindings([app.key_bindings, own])  # the last binding for a key wins
    return question


def choose_playbook(found: Sequence[Any], console: Any) -> str:
    """Plain ``warpwizard``: say what there is and where it came from, and let the person pick."""
    import questionary

    invalid = "(invalid: warpwizard validate shows why)"  # still listed; `run` reports why
    titles = {f.name: f.title or invalid for f in found}
    console.print(
        rich_text(
            f"{plural(len(found), 'playbook')} found; "
            "add a team's own with --playbook-dir DIR or WARPWIZARD_PLAYBOOK_PATH",
            "dim",
        )
    )
    choices = [
        questionary.Choice(title=visible(f"{f.name}: {titles[f.name]} ({f.origin})"), value=f.name) for f in found
    ]
    return str(questionary.select("Which playbook?", choices=choices).unsafe_ask())
