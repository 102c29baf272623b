"""A scripted host: answers from recorded values, so probes run for real against any machine's inputs.

Tests use it to stand in for NVML, subprocesses, files and the Windows registry, while the probe code
under test is the same code the live host runs.

It is strict: a program run, a child script or a `which` that the test did not script raises
UnscriptedCall naming the call, and so does reading or listing a path in a folder the test never
described (the error is also recorded, so a test whose probe swallowed it still fails; see
`take_unscripted`). A scripted folder in `dirs` lists everything in it: a path there that is not in
`files`/`dirs` is simply missing, and `exists`/`is_dir` answer from the scripted tree alone. A test
says "not there" explicitly elsewhere: a program mapped to None in `programs`, a command or child
answered with NOT_FOUND/CHILD_NOT_FOUND, a path in `absent`, or `missing_ok=True` for a machine on
which everything unscripted is missing.
"""

from __future__ import annotations

import ntpath
import posixpath
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Union

from envdoctor.host.base import (
    ChildOutcome,
    CommandResult,
    DiskInfo,
    MemoryInfo,
    OwnEnvironment,
    UrlStatus,
    file_too_large,
    not_a_regular_file,
)
from envdoctor.model.findings import PlatformInfo
from envdoctor.util.limits import FIFO_REASON

_MAX_LINKS = 40

ChildAnswer = Union[ChildOutcome, Callable[[str, Sequence[str], float], ChildOutcome]]

# What a missing program or child script answers on the live host.
NOT_FOUND = CommandResult(returncode=None, start_error="not found")
CHILD_NOT_FOUND = ChildOutcome(records=(), returncode=None, start_error="not found")


class UnscriptedCall(AssertionError):
    """A probe asked the fake machine something its test did not script."""


_unscripted: list[str] = []
_unscripted_lock = threading.Lock()


def take_unscripted() -> list[str]:
    """The unscripted calls made on any FakeHost since the last take (the test suite checks after
    every test), and forget them. Probes run in threads and the engine turns a probe's exception
    into a finding, so raising alone would not always fail the test."""
    with _unscripted_lock:
        taken = list(_unscripted)
        _unscripted.clear()
    return taken


@dataclass
class FakeHost:
    platform_info: PlatformInfo = field(
        default_factory=lambda: PlatformInfo("Linux", "6.1.0", "#1 SMP", "x86_64")
    )
    environ: dict[str, str] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    dirs: dict[str, tuple[str, ...]] = field(default_factory=dict)
    unreadable: set[str] = field(default_factory=set)
    fifos: set[str] = field(default_factory=set)  # FIFOs (named pipes) where files are expected
    programs: dict[str, str | None] = field(default_factory=dict)  # name -> path for which(); None: absent
    commands: dict[tuple[str, ...], CommandResult] = field(default_factory=dict)
    children: dict[str, ChildAnswer] = field(default_factory=dict)  # script -> answer
    python: str = "/usr/bin/python3"
    working_dir: str = "/home/user/project"
    cpus: int | None = 8
    mem: MemoryInfo | None = field(default_factory=lambda: MemoryInfo(32 * 2**30, 20 * 2**30))
    disk: DiskInfo | None = field(default_factory=lambda: DiskInfo(500 * 2**30, 200 * 2**30))
    calls: list[tuple[str, ...]] = field(default_factory=list)
    stream_env: list[dict[str, str]] = field(default_factory=list)  # the env overrides of each stream()
    links: dict[str, str] = field(default_factory=dict)  # symlink path -> target
    registry: dict[tuple[str, int], dict[str, str | int]] = field(default_factory=dict)  # (key, view)
    file_versions: dict[str, str] = field(default_factory=dict)  # path -> version resource
    home_dir: str | None = "/home/user"
    # envdoctor's own environment: by default one with torch, so it is examined when none is active
    own_prefix: str = "/usr"
    own_torch: bool = True
    # stream(): called with each argv before its scripted result is used (to change files, or to
    # raise KeyboardInterrupt as a user's Ctrl-C would).
    on_stream: Callable[[tuple[str, ...]], None] | None = None
    # URL prefix -> what a request gets. None: the network is not part of the test, every URL
    # answers 200; a dict makes it strict: a request it does not script fails the test.
    urls: dict[str, UrlStatus] | None = None
    absent: set[str] = field(default_factory=set)  # paths a read or listing is told do not exist
    missing_ok: bool = False  # everything unscripted is missing, as the old lenient fake had it

    def _unscripted(self, call: str) -> UnscriptedCall:
        """The error for an unscripted call, recorded for the suite's after-test check."""
        message = f"FakeHost: unscripted {call}: script it, or say it is absent (see FakeHost's docstring)"
        with _unscripted_lock:
            _unscripted.append(message)
        return UnscriptedCall(message)

    def _missing(self, path: str, call: str) -> bool:
        """True when `path` may be reported missing: its folder is scripted (and lists everything
        in it), or the test said so. A path in a part of the machine the test never described is an
        unscripted call."""
        paths = ntpath if self.platform_info.system == "Windows" else posixpath
        if self.missing_ok or path in self.absent or paths.dirname(path) in self.dirs:
            return True
        raise self._unscripted(f"{call}({path!r})")

    @property
    def env(self) -> Mapping[str, str]:
        return self.environ

    @property
    def own_python(self) -> str:
        return self.python

    def own_environment(self) -> OwnEnvironment:
        return OwnEnvironment(prefix=self.own_prefix, has_torch=self.own_torch)

    def platform(self) -> PlatformInfo:
        return self.platform_info

    def cpu_count(self) -> int | None:
        return self.cpus

    def memory(self) -> MemoryInfo | None:
        return self.mem

    def disk_usage(self, path: str) -> DiskInfo | None:
        return self.disk

    def cwd(self) -> str:
        return self.working_dir

    def which(self, name: str) -> str | None:
        if name in self.programs:
            return self.programs[name]
        if self.missing_ok:
            return None
        raise self._unscripted(f"which({name!r})")

    def exists(self, path: str) -> bool:
        return path in self.files or path in self.dirs or path in self.unreadable or path in self.fifos

    def is_dir(self, path: str) -> bool:
        return path in self.dirs

    def read_text(self, path: str, max_bytes: int | None = None, strict: bool = False) -> str:
        if path in self.unreadable:
            raise PermissionError(13, "Permission denied", path)
        if path in self.fifos:
            raise not_a_regular_file(path, FIFO_REASON)
        if path in self.dirs:
            raise IsADirectoryError(21, "Is a directory", path)
        if path not in self.files and self._missing(path, "read_text"):
            raise FileNotFoundError(2, "No such file or directory", path)
        text = self.files[path]
        if max_bytes is not None and len(text.encode("utf-8", errors="replace")) > max_bytes:
            raise file_too_large(path, max_bytes)
        if strict:
            # Invalid bytes are stored as surrogate escapes ("\udcff"): decode them as a real file would.
            text.encode("utf-8", errors="surrogateescape").decode("utf-8")
        return text

    def list_dir(self, path: str) -> tuple[str, ...]:
        if path in self.files:
            raise NotADirectoryError(20, "Not a directory", path)
        if path not in self.dirs and self._missing(path, "list_dir"):
            raise FileNotFoundError(2, "No such file or directory", path)
        return self.dirs[path]

    def run(self, argv: Sequence[str], timeout: float) -> CommandResult:
        key = tuple(argv)
        self.calls.append(key)
        if key in self.commands:
            return self.commands[key]
        if self.missing_ok:
            return NOT_FOUND
        raise self._unscripted(f"run({list(key)!r})")

    def stream(
        self,
        argv: Sequence[str],
        timeout: float,
        on_line: Callable[[str], None],
        env: Mapping[str, str] | None = None,
    ) -> CommandResult:
        key = tuple(argv)
        self.calls.append(key)
        self.stream_env.append(dict(env or {}))
        if self.on_stream is not None:
            self.on_stream(key)
        result = self.commands.get(key)
        if result is None:
            if self.missing_ok:
                return NOT_FOUND
            raise self._unscripted(f"stream({list(key)!r})")
        for line in (result.stdout + result.stderr).splitlines(keepends=True):
            on_line(line)
        return result

    def python_json(self, interpreter: str, script: str, args: Sequence[str], timeout: float) -> ChildOutcome:
        self.calls.append((interpreter, script, *args))
        answer = self.children.get(script)
        if answer is None:
            if self.missing_ok:
                return CHILD_NOT_FOUND
            raise self._unscripted(f"child script {script!r} in {interpreter!r}")
        if callable(answer):
            return answer(interpreter, args, timeout)
        return answer

    def realpath(self, path: str) -> str:
        for _ in range(_MAX_LINKS):  # a link loop ends here, as the OS gives up too
            for link, target in self.links.items():
                if path == link or path.startswith(link.rstrip("/\\") + "/"):
                    path = target + path[len(link) :]
                    break
            else:
                return path
        return path

    def registry_values(self, key: str, view: int) -> Mapping[str, str | int] | None:
        self.calls.append(("registry", key, str(view)))
        if self.platform_info.system != "Windows":
            return None
        for (known, known_view), values in self.registry.items():
            if known.lower() == key.lower() and known_view == view:  # the registry ignores case
                return values
        return None

    def file_version(self, path: str) -> str | None:
        if self.platform_info.system != "Windows":
            return None
        for known, version in self.file_versions.items():
            if known.lower() == path.lower():
                return version
        return None

    def home(self) -> str | None:
        return self.home_dir

    def url_status(self, url: str, timeout: float) -> UrlStatus:
        self.calls.append(("url", url))
        if self.urls is None:
            return UrlStatus(200)
        found = [prefix for prefix in self.urls if url.startswith(prefix)]
        if not found:
            raise AssertionError(f"FakeHost: no answer scripted for {url}")
        return self.urls[max(found, key=len)]
