"""Progress on stderr: one updating bar on a terminal, plain lines (only on change) elsewhere."""

from __future__ import annotations

from typing import TextIO

_BAR_WIDTH = 26
PREFIX = "turnwatch demo:"


class Progress:
    def __init__(self, stream: TextIO, total: int) -> None:
        self.stream = stream
        self.total = total
        self.tty = stream.isatty()
        self._sent = 0
        self._scored = 0
        self._shown: tuple[int, int] | None = None
        self._bar_open = False

    def note(self, text: str) -> None:
        self._end_bar()
        print(f"{PREFIX} {text}", file=self.stream, flush=True)

    def sent(self, scenario: str) -> None:
        self._sent += 1
        self._show(scenario)

    def scored(self, count: int) -> None:
        self._scored = count
        self._show()

    def done(self) -> None:
        self._end_bar()

    def _show(self, scenario: str | None = None) -> None:
        state = (self._sent, self._scored)
        if state == self._shown:
            return
        self._shown = state
        line = f"sent {self._sent}/{self.total} conversations, scored {self._scored}/{self.total}"
        if self.tty:
            filled = _BAR_WIDTH * self._scored // max(self.total, 1)
            bar = "#" * filled + "." * (_BAR_WIDTH - filled)
            print(f"\r{PREFIX} [{bar}] {line}", end="", file=self.stream, flush=True)
            self._bar_open = True
        else:
            suffix = f" ({scenario})" if scenario else ""
            print(f"{PREFIX} {line}{suffix}", file=self.stream, flush=True)

    def _end_bar(self) -> None:
        if self._bar_open:
            print(file=self.stream, flush=True)
            self._bar_open = False
