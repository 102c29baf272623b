"""The Host protocol: the one door between envdoctor and the operating system.

Probes receive a Host and never touch the OS themselves, so every probe runs the same code against
the live machine, a recorded Windows machine, or a fake in a test.
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from envdoctor.model.types import PlatformInfo
from envdoctor.util.records import record


@record
class CommandResult:
    """The outcome of running a program: it may not start, may time out, or may exit non-zero."""

    returncode: int | None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    start_error: str | None = None  # "not found", "permission denied", ...

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and self.start_error is None


@record
class ChildOutcome:
    """A stdlib-only script run in some interpreter: the JSON records it printed and how it ended.

    `records` are the raw JSON objects, one per stdout line; the probe that asked turns them into
    typed facts at once. `signal` is set when the child died of a signal (a segfault is 11).
    """

    records: tuple[Mapping[str, Any], ...]
    returncode: int | None
    signal: int | None = None
    timed_out: bool = False
    start_error: str | None = None
    stderr_tail: str = ""
    seconds: float = 0.0


@record
class MemoryInfo:
    total_bytes: int
    available_bytes: int


@record
class DiskInfo:
    total_bytes: int
    free_bytes: int


@record
class UrlStatus:
    """What one short request to a URL got: an HTTP status, or why nothing answered."""

    status: int | None  # any HTTP status means the server answered
    error: str | None = None  # "Name or service not known", "timed out", ...


def file_too_large(path: str, max_bytes: int) -> OSError:
    """The error a capped read raises: one wording for the live and the scripted host."""
    return OSError(errno.EFBIG, f"larger than {max_bytes // 1024} KiB, more than envdoctor reads", path)


def not_a_regular_file(path: str, what: str | None = None) -> OSError:
    """`what`: the reason with its kind ("not a regular file (a FIFO)") where the host knows it."""
    return OSError(errno.EINVAL, what or "not a regular file (a pipe, socket or device)", path)


@record
class OwnEnvironment:
    """The environment envdoctor itself runs in: where it is, and whether torch is importable there."""

    prefix: str  # sys.prefix
    has_torch: bool


class Host(Protocol):
    """Everything a probe may ask of the machine."""

    @property
    def env(self) -> Mapping[str, str]: ...

    @property
    def own_python(self) -> str:
        """The interpreter envdoctor itself runs in (where pynvml is installed)."""
        ...

    def own_environment(self) -> OwnEnvironment:
        """envdoctor's own environment; torch is looked for, never imported."""
        ...

    def platform(self) -> PlatformInfo: ...

    def cpu_count(self) -> int | None: ...

    def memory(self) -> MemoryInfo | None: ...

    def disk_usage(self, path: str) -> DiskInfo | None: ...

    def cwd(self) -> str: ...

    def which(self, name: str) -> str | None: ...

    def exists(self, path: str) -> bool: ...

    def is_dir(self, path: str) -> bool: ...

    def read_text(self, path: str, max_bytes: int | None = None, strict: bool = False) -> str:
        """The file's text; raises OSError when it cannot be read.

        With `max_bytes`, a file larger than that, or one that is not a regular file (a FIFO
        would block the read forever), raises OSError instead (see `file_too_large`). Bytes that
        are not UTF-8 are replaced, or with `strict` raise UnicodeDecodeError, as the tools whose
        files are read that way (pip, uv, conda) refuse such a file."""
        ...

    def list_dir(self, path: str) -> tuple[str, ...]:
        """Entry names in a folder; raises OSError when it cannot be listed."""
        ...

    def run(self, argv: Sequence[str], timeout: float) -> CommandResult: ...

    def stream(
        self,
        argv: Sequence[str],
        timeout: float,
        on_line: Callable[[str], None],
        env: Mapping[str, str] | None = None,
    ) -> CommandResult:
        """Run a program that changes the machine (`envdoctor fix`'s pip commands), handing each line
        of its output (stdout and stderr merged) to `on_line` as it comes. The result's stdout holds
        the output's tail. A timeout or Ctrl-C kills the program's whole process group; Ctrl-C is
        then raised again (KeyboardInterrupt) for the caller to report the state. `env`: variables
        set for the program on top of the environment (fix --offline's local-only pip settings)."""
        ...

    def python_json(self, interpreter: str, script: str, args: Sequence[str], timeout: float) -> ChildOutcome:
        """Run a child script (a file name in envdoctor/child) in `interpreter`."""
        ...

    def realpath(self, path: str) -> str:
        """The path with symbolic links resolved (the path itself when nothing resolves)."""
        ...

    def registry_values(self, key: str, view: int) -> Mapping[str, str | int] | None:
        """The values of a Windows registry key ("HKLM\\SOFTWARE\\..."), read in the 64- or 32-bit
        registry view; None when the key does not exist or this is not Windows. REG_SZ values come
        back as str, REG_DWORD as int; other types are left out."""
        ...

    def file_version(self, path: str) -> str | None:
        """A Windows file's version resource ("14.40.33810.0"); None when it has none or on other OSes."""
        ...

    def home(self) -> str | None:
        """The user's home folder as Python's expanduser("~") finds it; None when there is none."""
        ...

    def url_status(self, url: str, timeout: float) -> UrlStatus:
        """One GET of `url`, its body left unread, within about `timeout` seconds; never raises."""
        ...
