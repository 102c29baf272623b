"""A scripted host: answers from recorded values, so probes run for real against any machine's inputs.

Tests use it to stand in for NVML, subprocesses, files and (later) the Windows registry, while the
probe code under test is the same code the live host runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Union

from envdoctor.host.base import ChildOutcome, CommandResult, DiskInfo, MemoryInfo, file_too_large
from envdoctor.model import PlatformInfo

_MAX_LINKS = 40

ChildAnswer = Union[ChildOutcome, Callable[[str, Sequence[str], float], ChildOutcome]]


@dataclass
class FakeHost:
    platform_info: PlatformInfo = field(
        default_factory=lambda: PlatformInfo("Linux", "6.1.0", "#1 SMP", "x86_64")
    )
    environ: dict[str, str] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    dirs: dict[str, tuple[str, ...]] = field(default_factory=dict)
    unreadable: set[str] = field(default_factory=set)
    programs: dict[str, str] = field(default_factory=dict)  # name -> path for which()
    commands: dict[tuple[str, ...], CommandResult] = field(default_factory=dict)
    children: dict[str, ChildAnswer] = field(default_factory=dict)  # script -> answer
    python: str = "/usr/bin/python3"
    working_dir: str = "/home/user/project"
    cpus: int | None = 8
    mem: MemoryInfo | None = field(default_factory=lambda: MemoryInfo(32 * 2**30, 20 * 2**30))
    disk: DiskInfo | None = field(default_factory=lambda: DiskInfo(500 * 2**30, 200 * 2**30))
    calls: list[tuple[str, ...]] = field(default_factory=list)
    links: dict[str, str] = field(default_factory=dict)  # symlink path -> target
    registry: dict[tuple[str, int], dict[str, str | int]] = field(default_factory=dict)  # (key, view)
    file_versions: dict[str, str] = field(default_factory=dict)  # path -> version resource
    home_dir: str | None = "/home/user"

    @property
    def env(self) -> Mapping[str, str]:
        return self.environ

    @property
    def own_python(self) -> str:
        return self.python

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
        return self.programs.get(name)

    def exists(self, path: str) -> bool:
        return path in self.files or path in self.dirs or path in self.unreadable

    def is_dir(self, path: str) -> bool:
        return path in self.dirs

    def read_text(self, path: str, max_bytes: int | None = None, strict: bool = False) -> str:
        if path in self.unreadable:
            raise PermissionError(13, "Permission denied", path)
        if path in self.dirs:
            raise IsADirectoryError(21, "Is a directory", path)
        if path not in self.files:
            raise FileNotFoundError(2, "No such file or directory", path)
        text = self.files[path]
        if max_bytes is not None and len(text.encode("utf-8", errors="replace")) > max_bytes:
            raise file_too_large(path, max_bytes)
        if strict:
            # Invalid bytes are stored as surrogate escapes ("\udcff"): decode them as a real file would.
            text.encode("utf-8", errors="surrogateescape").decode("utf-8")
        return text

    def list_dir(self, path: str) -> tuple[str, ...]:
        if path not in self.dirs:
            raise FileNotFoundError(2, "No such file or directory", path)
        return self.dirs[path]

    def run(self, argv: Sequence[str], timeout: float) -> CommandResult:
        key = tuple(argv)
        self.calls.append(key)
        if key in self.commands:
            return self.commands[key]
        return CommandResult(returncode=None, start_error="not found")

    def python_json(self, interpreter: str, script: str, args: Sequence[str], timeout: float) -> ChildOutcome:
        self.calls.append((interpreter, script, *args))
        answer = self.children.get(script)
        if answer is None:
            return ChildOutcome(records=(), returncode=None, start_error="not found")
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
