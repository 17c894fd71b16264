"""The progress of ``dpaudit test``: a live line fitted to the terminal (:func:`progress_line`,
:func:`_progress`), erased on Ctrl-C (:class:`_erased_on_interrupt`), and plain lines with a
heartbeat where stderr is no terminal (:class:`_PlainProgress`)."""

from __future__ import annotations

import os

from rich.console import Console
from rich.markup import escape


class _PlainProgress:
    """Progress for ``dpaudit test`` when stderr is not a terminal (CI logs, pipes): a line when a
    trial ends and, while one runs, a heartbeat line every ``interval`` seconds (environment
    variable ``DPAUDIT_PROGRESS_INTERVAL``, default 30), so a long audit never looks hung."""

    def __init__(self, console_: Console, *, enabled: bool, interval: float | None = None):
        import threading

        self.console, self.enabled = console_, enabled
        self.interval = float(interval if interval is not None else os.environ.get("DPAUDIT_PROGRESS_INTERVAL", 30))
        self.state = {"budget": 0, "done": 0, "best": "-", "trial": 0, "pair": ""}
        self._stop = threading.Event()
        self._thread = None
        self._lock = threading.Lock()
        self.t0 = 0.0

    def _say(self, text: str) -> None:
        import time

        self.console.print(escape(f"[dpaudit] {text} ({time.monotonic() - self.t0:.0f} s)"), highlight=False,
                           soft_wrap=True)

    def heartbeat(self) -> None:
        """Print the state of the running trial (called every ``interval`` seconds by a thread)."""
        with self._lock:
            st = dict(self.state)
        self._say(f"trial {st['trial']}/{st['budget']} running ({st['pair']}); {st['done']} done, "
                  f"best margin {st['best']}")

    def _beat(self) -> None:
        while not self._stop.wait(self.interval):
            self.heartbeat()

    def __enter__(self):
        import threading
        import time

        self.t0 = time.monotonic()
        if self.enabled and self.interval > 0:
            self._thread = threading.Thread(target=self._beat, name="dpaudit-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        return False

    def begin(self, budget: int, finished: int, best_: str) -> None:
        with self._lock:
            self.state.update(budget=budget, done=finished, best=best_)

    def trial(self, number: int, pair: str) -> None:
        with self._lock:
            self.state.update(trial=number, pair=pair)

    def done(self, best_: str) -> None:
        with self._lock:
            self.state.update(done=self.state["done"] + 1, best=best_)
            st = dict(self.state)
        if self.enabled:
            self._say(f"trial {st['trial']}/{st['budget']} done; best margin {st['best']}")


def _clock(seconds) -> str:
    """``0:01:05`` for 65 s; ``-:--:--`` when unknown."""
    if seconds is None:
        return "-:--:--"
    s = max(int(seconds), 0)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def _fit_words(text: str, width: int) -> str:
    """``text`` in at most ``width`` cells, cut only between words (then ending in " …"); empty
    when not even its first word fits, so a number in it is shown whole or not at all."""
    if len(text) <= width:
        return text
    words, out = text.split(" "), ""
    for w in words:
        nxt = (out + " " + w) if out else w
        if len(nxt) + 2 > width:
            break
        out = nxt
    return out + " …" if out else ""


def progress_line(task, width: int):
    """The live progress line of ``dpaudit test`` in ``width`` cells, as a ``rich.text.Text``.

    Fields by priority: the trial count (``trial 3/10``), the best margin so far, the elapsed
    time, the ETA, then the pair's label (cut between words) and a bar in what is left. A field
    that does not fit is left out whole; no number is ever cut.

    Parameters
    ----------
    task : rich.progress.Task
        With ``total``, ``completed``, ``description`` (the pair's label) and the fields ``trial``
        (the running trial, 1-based; 0 before the first) and ``best`` (the best margin, text).
    width : int
        Cells available (the console's width).
    """
    from rich.text import Text

    total = int(task.total or 0)
    running = int(task.fields.get("trial") or 0)
    count = f"trial {running}/{total}" if running else f"{int(task.completed)}/{total} done"
    fields = [count, f"best margin {task.fields.get('best', '-')}", _clock(task.elapsed),
              f"ETA {_clock(task.time_remaining)}"]
    shown, used = [], -2
    for f in fields:  # by priority; a field that does not fit is left out
        if used + 2 + len(f) <= width:
            shown.append(f)
            used += 2 + len(f)
    head, tail = shown[0], "  ".join(shown[1:])
    room = width - used
    label = _fit_words(task.description or "", room - 4) if room > 10 else ""
    line = Text(head + (": " + label if label else ""))
    bar_width = width - line.cell_len - (2 + len(tail) if tail else 0) - 2
    if bar_width >= 6:
        done = min(bar_width, round(bar_width * task.completed / total)) if total else 0
        line.append("  ")
        line.append("━" * done, style="bar.complete")
        line.append("━" * (bar_width - done), style="bar.back")
    if tail:
        line.append("  " + tail)
    return line


_ECHO_ROOM = 3  # cells the live line leaves free at its end (a terminal's "^C" echo)


def _progress(console_: Console, *, disable: bool):
    """The live progress of ``dpaudit test``: one line fitted to the terminal (:func:`progress_line`)."""
    from rich.progress import Progress, ProgressColumn

    class _Line(ProgressColumn):
        def render(self, task):  # room for the "^C" a terminal echoes: a full line would wrap, and show twice
            return progress_line(task, console_.width - _ECHO_ROOM)

    return Progress(_Line(), console=console_, disable=disable, transient=False)


class _erased_on_interrupt:
    """Within it, Ctrl-C erases the live progress line instead of printing it once more below
    the terminal's ``^C`` (the line would show twice); the interrupted message follows."""

    def __init__(self, progress):
        self.progress = progress

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if kind is not None and issubclass(kind, KeyboardInterrupt):
            self.progress.live.transient = True
        return False
