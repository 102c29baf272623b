"""Builds FakeHost machines file by file, so a scenario reads like the folder tree it records."""

from __future__ import annotations

import ntpath
import posixpath

from envdoctor.host.base import ChildOutcome, CommandResult
from envdoctor.host.fake import FakeHost
from envdoctor.model.findings import Interpreter, PlatformInfo
from envdoctor.target import PythonInfo, Target

WINDOWS_11 = PlatformInfo("Windows", "11", "10.0.22631", "AMD64")
LINUX = PlatformInfo("Linux", "6.8.0-45-generic", "#45-Ubuntu SMP", "x86_64")


class Machine:
    def __init__(self, platform: PlatformInfo = LINUX, env: dict[str, str] | None = None) -> None:
        self.host = FakeHost(platform_info=platform, environ=dict(env or {}))
        self.paths = ntpath if platform.system == "Windows" else posixpath

    def folder(self, path: str) -> Machine:
        """Create `path` and its parents, each listing its children."""
        parent = self.paths.dirname(path)
        if path not in self.host.dirs:
            self.host.dirs[path] = ()
        if parent and parent != path:
            self.folder(parent)
            name = self.paths.basename(path)
            if name not in self.host.dirs[parent]:
                self.host.dirs[parent] = tuple(sorted((*self.host.dirs[parent], name)))
        return self

    def file(self, path: str, text: str = "", version: str | None = None) -> Machine:
        self.folder(self.paths.dirname(path))
        parent = self.paths.dirname(path)
        name = self.paths.basename(path)
        if name not in self.host.dirs[parent]:
            self.host.dirs[parent] = tuple(sorted((*self.host.dirs[parent], name)))
        self.host.files[path] = text
        if version is not None:
            self.host.file_versions[path] = version
        return self

    def files(self, folder: str, *names: str, version: str | None = None) -> Machine:
        for name in names:
            self.file(self.paths.join(folder, name), version=version)
        return self

    def link(self, path: str, target: str) -> Machine:
        self.host.links[path] = target
        parent = self.paths.dirname(path)
        self.folder(parent)
        name = self.paths.basename(path)
        if name not in self.host.dirs[parent]:
            self.host.dirs[parent] = tuple(sorted((*self.host.dirs[parent], name)))
        return self

    def program(self, name: str, path: str | None) -> Machine:
        """`which(name)` finds `path`; None: the program is not on PATH."""
        self.host.programs[name] = path
        return self

    def absent(self, *paths: str) -> Machine:
        """Files a probe may try to read that this machine does not have (FakeHost is strict)."""
        self.host.absent.update(paths)
        return self

    def command(self, argv: tuple[str, ...], stdout: str, returncode: int = 0) -> Machine:
        self.host.commands[argv] = CommandResult(returncode=returncode, stdout=stdout)
        return self

    def registry(self, key: str, view: int, **values: str | int) -> Machine:
        self.host.registry[(key, view)] = dict(values)
        return self

    def child(self, script: str, *records: dict[str, object]) -> Machine:
        self.host.children[script] = ChildOutcome(records=tuple(records), returncode=0)
        return self


def target(path: str, prefix: str, version: str = "3.11.9", conda: bool = False, venv: bool = True) -> Target:
    reason = "the active environment ($CONDA_PREFIX)" if conda else "the active environment ($VIRTUAL_ENV)"
    return Target(
        interpreter=Interpreter(path=path, reason=reason),
        info=PythonInfo(
            executable=path,
            version=version,
            implementation="CPython",
            bits=64,
            prefix=prefix,
            is_venv=venv and not conda,
            is_conda=conda,
        ),
    )
