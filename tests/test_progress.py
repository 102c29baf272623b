"""Progress on a terminal (issue 13, item 23): a spinner on stderr naming what still runs, a line for
a probe slower than a few seconds, cleared before the report; nothing in CI, pipes or JSON, and
never anything on stdout."""

from __future__ import annotations

import io
import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from envdoctor.progress import Progress, wanted

pytestmark = pytest.mark.slow


class Terminal(io.StringIO):
    """A stream that says it is a terminal, as stderr in a terminal does."""

    def isatty(self) -> bool:
        return True


def test_wanted_only_for_a_console_report_on_a_terminal_outside_ci() -> None:
    assert wanted(Terminal(), {}, console_format=True)
    assert not wanted(io.StringIO(), {}, console_format=True)  # a pipe or file
    assert not wanted(Terminal(), {"CI": "true"}, console_format=True)
    assert not wanted(Terminal(), {}, console_format=False)  # JSON, JUnit, ...
    assert not wanted(Terminal(), {"TERM": "dumb"}, console_format=True)


def test_the_spinner_names_what_runs_announces_a_slow_probe_and_clears_itself() -> None:
    stream = Terminal()
    release = threading.Event()
    slow = threading.Thread(target=release.wait, daemon=True)
    quick = threading.Thread(target=lambda: None, daemon=True)
    slow.start()
    quick.start()
    quick.join()
    with Progress(stream, slow_seconds=0.3, interval=0.02) as progress:
        progress.watch({"torch": ("PyTorch build", slow), "nvml": ("NVIDIA driver", quick)})
        time.sleep(0.6)
        release.set()
        slow.join()
    text = stream.getvalue()
    assert "importing torch" in text and "NVIDIA driver" not in text  # only what still runs
    assert text.count("envdoctor: importing torch is taking a while") == 1
    assert text.endswith("\r\x1b[2K")  # cleared: the report starts on a clean line


def test_an_ascii_terminal_gets_ascii_frames() -> None:
    class Ascii(Terminal):
        encoding = "ascii"

    stream = Ascii()
    with Progress(stream, interval=0.01):
        time.sleep(0.1)
    stream.getvalue().encode("ascii")


HANGING_TORCH = "import time\ntime.sleep(1000)\n"


@pytest.mark.skipif(os.name != "posix", reason="a pseudo-terminal")
def test_check_on_a_terminal_shows_progress_on_stderr_only(tmp_path: Path) -> None:
    (tmp_path / "site" / "torch").mkdir(parents=True)
    (tmp_path / "site" / "torch" / "__init__.py").write_text(HANGING_TORCH, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site"), "HOME": str(tmp_path), "TERM": "xterm"}
    for name in ("CI", "GITHUB_ACTIONS", "VIRTUAL_ENV", "CONDA_PREFIX"):
        env.pop(name, None)
    master, slave = os.openpty()
    proc = subprocess.Popen(
        # --timeout 10: the hung child must outlive the probe's slow line (progress.SLOW_SECONDS, 3 s)
        # after a start-up that the deadline counts (seconds on a loaded machine); 6 was too short.
        [sys.executable, "-m", "envdoctor", "check", "--only", "torch", "--timeout", "10"],
        stdout=subprocess.PIPE,
        stderr=slave,
        env=env,
        cwd=tmp_path,
    )
    os.close(slave)
    seen = bytearray()
    try:
        while True:  # read the terminal until the process closes it
            ready, _, _ = select.select([master], [], [], 30)
            if not ready:
                break
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the other end is closed
                break
            if not chunk:
                break
            seen += chunk
        out, _ = proc.communicate(timeout=30)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    terminal = seen.decode("utf-8", "replace")
    assert "importing torch" in terminal and "is taking a while" in terminal, terminal
    assert terminal.rstrip(" ").endswith("\r\x1b[2K"), terminal[-200:]  # cleared before the report
    report = out.decode()
    assert "ED003" in report and "\r" not in report and "importing torch…" not in report
