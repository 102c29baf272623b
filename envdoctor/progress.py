"""What is still running, on a terminal (issue 13, item 23): a slow `import torch` must not leave the
screen blank. A spinner on stderr names the probes still running ("importing torch"), a probe slower
than a few seconds gets a line of its own, and the spinner is cleared before the report is printed.

Only where someone watches: stderr is a terminal, not CI, and the report is the console one. Never
on stdout (it carries the report, maybe into a file). The spinner runs in a daemon thread that only
reads the probes' threads, so it can neither slow nor stop a check.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from typing import TextIO

from envdoctor.ci import is_ci
from envdoctor.util import threads

SLOW_SECONDS = 3.0  # a probe still running after this gets its own line
_INTERVAL = 0.1
_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_ASCII_FRAMES = "|/-\\"
# What a probe is doing, in words, where its area title alone would not say it.
DOING = {"torch": "importing torch"}
_CLEAR = "\r\x1b[2K"


def wanted(stream: TextIO, environ: Mapping[str, str], console_format: bool) -> bool:
    """Whether to show progress on `stream`: a terminal someone watches, a console report."""
    if not console_format or is_ci(environ) or environ.get("TERM", "").lower() == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):  # closed or not a real file
        return False


class Progress:
    """A spinner on `stream` naming what still runs; `watch` gives it the probes, `stop` clears it."""

    def __init__(
        self, stream: TextIO, slow_seconds: float = SLOW_SECONDS, interval: float = _INTERVAL
    ) -> None:
        self._stream = stream
        self._slow = slow_seconds
        self._interval = interval
        self._started = time.monotonic()
        self._running: dict[str, tuple[str, threading.Thread]] = {}
        self._announced: set[str] = set()
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._frames = _FRAMES if self._encodes(_FRAMES + "…") else _ASCII_FRAMES
        self._thread = threads.create(self._run, "progress")

    def _encodes(self, text: str) -> bool:
        try:
            text.encode(getattr(self._stream, "encoding", None) or "utf-8")
            return True
        except (UnicodeEncodeError, LookupError):
            return False

    def start(self) -> Progress:
        self._thread.start()
        return self

    def watch(self, probes: Mapping[str, tuple[str, threading.Thread]]) -> None:
        """The probes now running: name -> (title, the thread that runs it)."""
        with self._lock:
            self._running = dict(probes)
            self._started = time.monotonic()

    def stop(self) -> None:
        """Stop and clear the spinner line: what follows (the report) starts on a clean line."""
        if self._done.is_set():
            return
        self._done.set()
        if self._thread.is_alive():
            self._thread.join(1.0)
        self._write(_CLEAR)

    def __enter__(self) -> Progress:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def _write(self, text: str) -> None:
        try:
            self._stream.write(text)
            self._stream.flush()
        except (OSError, ValueError, RuntimeError):  # a closed terminal costs the spinner only
            pass

    def _run(self) -> None:
        frame = 0
        while not self._done.wait(self._interval):
            with self._lock:
                running = [
                    (name, title) for name, (title, thread) in self._running.items() if thread.is_alive()
                ]
                waited = time.monotonic() - self._started
            for name, title in running:
                if waited >= self._slow and name not in self._announced:
                    self._announced.add(name)
                    self._write(
                        f"{_CLEAR}envdoctor: {_doing(name, title)} is taking a while ({waited:.0f} s)\n"
                    )
            what = ", ".join(_doing(name, title) for name, title in running) or "starting"
            line = f"{self._frames[frame % len(self._frames)]} {what}{'…' if self._encodes('…') else '...'}"
            line += f" {waited:.0f} s" if running else ""
            self._write(_CLEAR + _fit(line, self._stream))
            frame += 1


def _doing(name: str, title: str) -> str:
    return DOING.get(name, title)


def _fit(line: str, stream: TextIO) -> str:
    """One terminal line: a spinner that wrapped would leave a line behind at every redraw."""
    try:
        width = os.get_terminal_size(stream.fileno()).columns or 80  # 0: a terminal without a size
    except (AttributeError, OSError, ValueError):
        width = 80
    return line if len(line) < width else line[: max(1, width - 1)]
