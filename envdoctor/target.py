"""Which Python environment is examined: --python, else $VIRTUAL_ENV, else $CONDA_PREFIX, else ours
(or, when ours holds no torch, the user's project environment: see choose.py)."""

from __future__ import annotations

import dataclasses
import ntpath
import posixpath
import threading

from envdoctor import choose
from envdoctor.host.base import Host
from envdoctor.host.ending import ending_of_outcome
from envdoctor.model.types import Interpreter
from envdoctor.util import threads
from envdoctor.util.records import record
from envdoctor.util.serde import DataError, from_data

_INFO_TIMEOUT = 20.0


class TargetError(Exception):
    """The interpreter to examine cannot be used; the message is one line for the user."""


@record
class PythonInfo:
    executable: str
    version: str
    implementation: str
    bits: int
    prefix: str
    is_venv: bool
    is_conda: bool
    free_threaded: bool = False
    # The interpreter's own CPU architecture (platform.machine() inside it): "x86_64" on an Apple
    # Silicon Mac means it runs under Rosetta, whatever the machine is. "": older snapshots.
    machine: str = ""
    # macOS only: the version this interpreter is told (platform.mac_ver()). A binary built with an
    # old SDK is told "10.16" on macOS 11 and later (Apple's compatibility shim), and so is torch
    # inside it. None elsewhere, and in older snapshots.
    mac_version: str | None = None

    @property
    def minor(self) -> str:
        """ "3.11" from "3.11.7"."""
        return ".".join(self.version.split(".")[:2])


class Target:
    """The examined interpreter and what it said about itself.

    `info` may still be on its way: start_target asks in the background so that the probes (the
    torch import above all) need not wait for it; reading `info` then waits, or raises TargetError.
    """

    def __init__(self, interpreter: Interpreter, info: PythonInfo | None = None) -> None:
        self.interpreter = interpreter
        self._info = info
        self._error: TargetError | None = None
        self._asking: threading.Thread | None = None

    def _ask_in_background(self, host: Host, timeout: float = _INFO_TIMEOUT) -> None:
        def ask() -> None:
            try:
                self._info = read_python_info(host, self.interpreter.path, timeout)
            except TargetError as exc:
                self._error = exc

        self._asking = threads.start(ask, "python-info")

    @property
    def info(self) -> PythonInfo:
        if self._asking is not None:
            self._asking.join()
        if self._error is not None:
            raise self._error
        if self._info is None:  # only a Target built without info and never asked
            raise TargetError(f"{self.interpreter.path}: nothing is known about this interpreter")
        return self._info

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Target):
            return NotImplemented
        return (self.interpreter, self.info) == (other.interpreter, other.info)

    __hash__ = None  # type: ignore[assignment]


def choose_interpreter(host: Host, explicit: str | None) -> Interpreter:
    """The interpreter to examine and the reason, before anything is run.

    --python, else the active environment ($VIRTUAL_ENV, $CONDA_PREFIX), else envdoctor's own
    interpreter when torch is there; an own environment without torch (a pipx or uv tool install)
    is no project's: the user's is looked for first (choose.py)."""
    if explicit:
        found = choose.explicit(host, explicit)
        return found if isinstance(found, Interpreter) else Interpreter(explicit, "given with --python")
    return choose.implicit(host)


def _chosen(host: Host, explicit: str | None) -> Interpreter:
    if not explicit:
        return choose_interpreter(host, None)
    found = choose.explicit(host, explicit)
    if isinstance(found, str):
        raise TargetError(found)
    return found


def resolve_target(host: Host, explicit: str | None, timeout: float = _INFO_TIMEOUT) -> Target:
    """Choose the interpreter and check that it runs; TargetError when it does not."""
    interpreter = _chosen(host, explicit)
    return Target(interpreter, read_python_info(host, interpreter.path, timeout))


def start_target(host: Host, explicit: str | None, timeout: float = _INFO_TIMEOUT) -> Target:
    """Like resolve_target, but an interpreter that is surely Python (envdoctor's own, or the
    active environment's) is asked about itself in the background. A path given with --python
    could be any program, so it is checked before any probe runs a script with it. `timeout`
    bounds that question (at most 20 s; less when the run's --timeout leaves less)."""
    timeout = min(timeout, _INFO_TIMEOUT)
    if explicit:
        return resolve_target(host, explicit, timeout)
    target = Target(_chosen(host, None))
    target._ask_in_background(host, timeout)
    return target


def through_shim(interpreter: Interpreter, info: PythonInfo) -> Interpreter:
    """The interpreter to show: a version manager's shim (pyenv, asdf, mise: a script in a
    "shims" folder) only picks and runs another interpreter, the one that reports itself as
    sys.executable. That one is shown; the shim the user typed or PATH found stays in the reason."""
    path = interpreter.path
    folder = (
        ntpath.basename(ntpath.dirname(path)) if "\\" in path else posixpath.basename(posixpath.dirname(path))
    )
    if folder.lower() != "shims" or not info.executable or info.executable == path:
        return interpreter
    return dataclasses.replace(
        interpreter, path=info.executable, reason=f"{interpreter.reason}, run by the shim {path}"
    )


def read_python_info(host: Host, path: str, timeout: float = _INFO_TIMEOUT) -> PythonInfo:
    """What the interpreter says about itself; TargetError when it is no runnable Python."""
    outcome = host.python_json(path, "python_info.py", (), timeout)
    records = [r for r in outcome.records if r.get("record") == "python"]
    if not records:
        if outcome.start_error and outcome.start_error.startswith("printed more than"):
            why = outcome.start_error  # the live host stopped it: it never stops printing
        else:
            why = ending_of_outcome(outcome, limit=timeout).describe()
        raise TargetError(f"{path} is not a runnable Python interpreter ({why})")
    try:
        info = from_data(PythonInfo, {k: v for k, v in records[-1].items() if k != "record"})
    except DataError as exc:
        raise TargetError(f"{path} gave an unexpected answer about itself ({exc})") from None
    return info
