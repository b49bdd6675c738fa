"""Progress of long work on stderr: rich's live bars at a terminal, or a plain line now and then for
a log (``--progress`` without a terminal). The library reports through ``wizard.progress``; this is
the one renderer, and it shows nothing for work done within ``DELAY`` seconds, so small traces and
quick probes print exactly what they always printed.

Work of the same label without a count (a probe) shares one line, which says what the innermost
piece of work does: "trace.inspect  running PyTorch's trace validator  0:00:03".
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from rich import filesize
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    ProgressColumn,
    TaskID,
    TimeElapsedColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)
from rich.progress import Progress as RichProgress
from rich.text import Text

from wizard.progress import Task, Unit
from wizard.system import Clock
from wizard.threads import signals_to_main_thread, start
from wizard.untrusted import cut, rich_text, visible

DELAY = 0.5  # seconds of work before anything is shown
PLAIN_EVERY = 5.0  # seconds between two plain lines of one task
REFRESH_PER_SECOND = 2  # a redraw is rich laying out a table (2 to 8 ms): twice a second keeps it under 2%


class _Description(ProgressColumn):
    def render(self, task: Any) -> Text:
        text: Text = task.fields["text"]
        return text


class _Bar(ProgressColumn):
    """A bar for counted work; none on a probe's line (it has no count)."""

    def __init__(self) -> None:
        super().__init__()
        self.bar = BarColumn(bar_width=20)

    def render(self, task: Any) -> Any:
        return self.bar.render(task) if task.fields.get("unit") else Text("")


class _Amount(ProgressColumn):
    """Bytes read of the size, rate and time left; or files done of all of them."""

    def __init__(self) -> None:
        super().__init__()
        self.bytes, self.speed, self.left = DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn()

    def render(self, task: Any) -> Text:
        unit = task.fields.get("unit")
        if unit == "bytes":
            read = filesize.decimal(int(task.completed)) if task.total is None else self.bytes.render(task)
            parts: list[Text | str] = [Text(read, style="progress.download") if isinstance(read, str) else read]
            parts += [" ", self.speed.render(task)]
            if task.total is not None:
                parts += [" ", self.left.render(task), Text(" left", style="progress.remaining")]
            return Text.assemble(*parts)
        if unit == "files" and task.total is not None:
            return Text(f"{int(task.completed)}/{int(task.total)} files", style="progress.download")
        return Text("")


class _Elapsed(ProgressColumn):
    """The time elapsed, for work whose time left is not shown (a probe, files): a bytes bar has it."""

    def __init__(self) -> None:
        super().__init__()
        self.elapsed = TimeElapsedColumn()

    def render(self, task: Any) -> Text:
        return Text("") if task.fields.get("unit") == "bytes" and task.total else self.elapsed.render(task)


def _size(count: float) -> str:
    return f"{count / 1e6:,.1f} MB"


@dataclass
class _Line:
    """One line on screen: a rich task, and the work sharing it (innermost last)."""

    label: str
    unit: Unit
    started: float
    id: TaskID | None = None
    handles: list[_Handle] = field(default_factory=list)  # the work sharing this line, innermost last
    completed: float = 0.0
    total: float | None = None
    printed: float | None = None  # plain mode: when this line was last printed
    shown: str | None = None  # live: the words on the line now


class _Handle:
    def __init__(self, owner: TerminalProgress, line: _Line, doing: str) -> None:
        self.owner, self.line, self.doing, self.closed = owner, line, doing, False

    def update(self, completed: float | None = None, *, total: float | None = None, doing: str | None = None) -> None:
        if not self.closed:
            self.owner._update(self, completed, total, doing)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.owner._close(self)


class TerminalProgress:
    """``wizard.progress.Progress`` drawn on ``console`` (stderr): ``live`` with rich at a terminal,
    else a plain line per task at most every ``PLAIN_EVERY`` seconds. Nothing until work has taken
    ``DELAY`` seconds; a live display is erased when the last task ends (before a report prints)."""

    def __init__(self, console: Console, clock: Clock, *, live: bool, delay: float = DELAY) -> None:
        self.console, self.clock, self.live, self.delay = console, clock, live, delay
        self._lock = threading.RLock()
        self._lines: list[_Line] = []
        self._bars: RichProgress | None = None
        self._shown = False
        self._timer: threading.Timer | None = None

    # -- what the library calls ---------------------------------------------------------------
    def task(self, label: str, *, doing: str = "", total: float | None = None, unit: Unit = "") -> Task:
        with self._lock:
            line = self._shared(label) if not unit else None
            if line is None:
                line = _Line(label, unit, self.clock.monotonic(), total=total)
                self._lines.append(line)
                if self._bars is not None:
                    self._add(line)
                self._arm()
            handle = _Handle(self, line, doing)
            line.handles.append(handle)
            self._draw(line)
            return handle

    def _shared(self, label: str) -> _Line | None:
        """The line work without a count joins: its label's, or (no label: a step of whatever runs)
        the latest such line."""
        lines = [x for x in self._lines if not x.unit and (x.label == label or not label)]
        return lines[-1] if lines else None

    def close(self) -> None:
        """Erase whatever is shown (the CLI's last word, however it ends)."""
        with self._lock:
            self._lines.clear()
            self._hide()

    # -- the handles' calls -------------------------------------------------------------------
    def _update(self, handle: _Handle, completed: float | None, total: float | None, doing: str | None) -> None:
        with self._lock:
            line = handle.line
            if completed is not None:
                line.completed = completed
            if total is not None:
                line.total = total
            if doing is not None:
                handle.doing = doing
            if not self._shown and self.clock.monotonic() - self._first() >= self.delay:
                self._show()
            self._draw(line)

    def _close(self, handle: _Handle) -> None:
        with self._lock:
            line = handle.line
            line.handles.remove(handle)
            if line.handles:
                self._draw(line)
                return
            if line in self._lines:
                self._lines.remove(line)
                if not self.live and line.printed is not None:
                    elapsed = self.clock.monotonic() - line.started
                    self._print(f"{visible(line.label)}: done in {elapsed:.1f} s")
                if self._bars is not None and line.id is not None:
                    self._bars.remove_task(line.id)
            if not self._lines:
                self._hide()

    # -- showing ------------------------------------------------------------------------------
    def _first(self) -> float:
        return min((x.started for x in self._lines), default=self.clock.monotonic())

    def _arm(self, wait: float | None = None) -> None:
        """Show the work once it has taken the delay, even if it reports nothing meanwhile (a probe)."""
        if self._shown or self._timer is not None:
            return
        self._timer = threading.Timer(self.delay if wait is None else wait, self._on_timer)
        self._timer.daemon = True
        start(self._timer)

    def _on_timer(self) -> None:
        """The delay is the clock's (injected: tests move it), so wait again while it says too early."""
        with self._lock:
            self._timer = None
            if not self._lines or self._shown:
                return
            left = self.delay - (self.clock.monotonic() - self._first())
            if left > 0:
                self._arm(max(left, 0.05))
            else:
                self._show()

    def _show(self) -> None:
        self._shown = True
        if not self.live:
            for line in self._lines:
                self._draw(line)
            return
        self._bars = RichProgress(
            _Description(),
            _Bar(),
            _Amount(),
            _Elapsed(),
            console=self.console,
            transient=True,
            refresh_per_second=REFRESH_PER_SECOND,
            redirect_stdout=False,
            redirect_stderr=False,
            get_time=self.clock.monotonic,
        )
        for line in self._lines:
            self._add(line)
        with signals_to_main_thread():  # rich's refresh thread
            self._bars.start()

    def _hide(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._bars is not None:
            self._bars.stop()  # transient: the lines are erased
            self._bars = None
        self._shown = False

    def _add(self, line: _Line) -> None:
        assert self._bars is not None
        line.id = self._bars.add_task(
            "", total=line.total, completed=int(line.completed), unit=line.unit, text=Text("")
        )
        line.shown = None
        self._bars.tasks[-1].start_time = line.started  # elapsed counts from when the work began
        self._draw(line)

    def _text(self, line: _Line) -> Text:
        doing = next((h.doing for h in reversed(line.handles) if h.doing), "")
        text = Text.assemble(rich_text(cut(visible(line.label), 60), "bold"), "  ", rich_text(cut(visible(doing), 100)))
        text.no_wrap, text.overflow = True, "ellipsis"  # one line, cut at the terminal's width
        return text

    def _draw(self, line: _Line) -> None:
        if not self._shown:
            return
        if self.live:
            if self._bars is not None and line.id is not None:
                text = self._text(line)
                if text.plain != line.shown:  # the same words: only the numbers change
                    line.shown = text.plain
                    self._bars.update(line.id, text=text)
                self._bars.update(line.id, completed=line.completed, total=line.total)
            return
        now = self.clock.monotonic()
        if line.printed is not None and now - line.printed < PLAIN_EVERY:
            return
        line.printed = now
        self._print(self._plain(line, now - line.started))

    def _plain(self, line: _Line, elapsed: float) -> str:
        text = self._text(line).plain
        if line.unit == "bytes":
            size = f" of {_size(line.total)}" if line.total else ""
            text += f": {_size(line.completed)}{size}"
        elif line.unit == "files" and line.total is not None:
            text += f": {int(line.completed)}/{int(line.total)} files"
        return f"{text} ({elapsed:.0f} s)"

    def _print(self, text: str) -> None:
        self.console.print(Text(text), soft_wrap=True)
