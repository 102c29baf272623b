"""Which Python environment is examined: --python, else $VIRTUAL_ENV, else $CONDA_PREFIX, else ours."""

from __future__ import annotations

from dataclasses import dataclass

from envdoctor.host.base import Host
from envdoctor.model import Interpreter
from envdoctor.serde import DataError, from_data

_INFO_TIMEOUT = 20.0


class TargetError(Exception):
    """The interpreter to examine cannot be used; the message is one line for the user."""


@dataclass(frozen=True)
class PythonInfo:
    executable: str
    version: str
    implementation: str
    bits: int
    prefix: str
    is_venv: bool
    is_conda: bool
    free_threaded: bool = False

    @property
    def minor(self) -> str:
        """ "3.11" from "3.11.7"."""
        return ".".join(self.version.split(".")[:2])


@dataclass(frozen=True)
class Target:
    interpreter: Interpreter
    info: PythonInfo


def choose_interpreter(host: Host, explicit: str | None) -> Interpreter:
    """The interpreter to examine and the reason, before anything is run."""
    windows = host.platform().system == "Windows"
    if explicit:
        return Interpreter(path=explicit, reason="given with --python")
    env = host.env
    for variable in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        prefix = env.get(variable)
        if not prefix:
            continue
        for candidate in _env_pythons(prefix, windows):
            if host.exists(candidate):
                return Interpreter(path=candidate, reason=f"the active environment (${variable})")
    return Interpreter(path=host.own_python, reason="the interpreter envdoctor runs in")


def _env_pythons(prefix: str, windows: bool) -> tuple[str, ...]:
    sep = "\\" if windows else "/"
    prefix = prefix.rstrip("\\/")
    if windows:
        return (f"{prefix}{sep}python.exe", f"{prefix}{sep}Scripts{sep}python.exe")
    return (f"{prefix}/bin/python", f"{prefix}/bin/python3")


def resolve_target(host: Host, explicit: str | None) -> Target:
    """Choose the interpreter and check that it runs; TargetError when it does not."""
    interpreter = choose_interpreter(host, explicit)
    path = interpreter.path
    if explicit and not host.exists(path):
        raise TargetError(f"--python {path}: no such file; expected the path of a Python interpreter")
    if explicit and host.is_dir(path):
        raise TargetError(f"--python {path}: is a folder; expected an interpreter such as {path}/bin/python")
    outcome = host.python_json(path, "python_info.py", (), _INFO_TIMEOUT)
    records = [r for r in outcome.records if r.get("record") == "python"]
    if not records:
        if outcome.start_error:
            why = outcome.start_error
        elif outcome.timed_out:
            why = f"did not answer within {_INFO_TIMEOUT:.0f} s"
        else:
            why = f"exited with code {outcome.returncode} without reporting"
        raise TargetError(f"{path} is not a runnable Python interpreter ({why})")
    try:
        info = from_data(PythonInfo, {k: v for k, v in records[-1].items() if k != "record"})
    except DataError as exc:
        raise TargetError(f"{path} gave an unexpected answer about itself ({exc})") from None
    return Target(interpreter=interpreter, info=info)
