"""Which environment to examine when the user did not say, and what a --python value names.

envdoctor installed with pipx or `uv tool` runs in a private environment that holds envdoctor but
not torch. Examining that one would tell the user to install torch where no project of theirs will
ever import it, so when nothing is active envdoctor looks for the user's environment instead:
./.venv, ./venv, the conda base, python3 on PATH outside envdoctor's own environment. Only when none
is found is its own examined, and then no fix installs torch into it.

Everything goes through the Host: no file is looked at, no program found, any other way.
"""

from __future__ import annotations

from envdoctor.host.base import Host, OwnEnvironment
from envdoctor.model.types import Interpreter, StaleVariable
from envdoctor.util.records import record

ACTIVATION_VARIABLES = ("VIRTUAL_ENV", "CONDA_PREFIX")
PROJECT_FOLDERS = (".venv", "venv")


def _sep(windows: bool) -> str:
    return "\\" if windows else "/"


def env_pythons(prefix: str, windows: bool) -> tuple[str, ...]:
    """Where an environment rooted at `prefix` keeps its interpreter (venv and conda layouts)."""
    prefix = prefix.rstrip("\\/")
    if windows:
        return (f"{prefix}\\python.exe", f"{prefix}\\Scripts\\python.exe")
    return (f"{prefix}/bin/python", f"{prefix}/bin/python3")


def _first(host: Host, paths: tuple[str, ...]) -> str | None:
    return next((p for p in paths if host.exists(p) and not host.is_dir(p)), None)


def _inside(path: str, prefix: str, windows: bool) -> bool:
    sep = _sep(windows)
    a, b = path.rstrip("\\/"), prefix.rstrip("\\/")
    if windows:
        a, b = a.lower(), b.lower()
    return a == b or a.startswith(b + sep)


def own_label(own: OwnEnvironment) -> str:
    """ "a pipx install", "a uv tool install", or a plain description."""
    parts = [p.lower() for p in own.prefix.replace("\\", "/").split("/")]
    pairs = set(zip(parts, parts[1:]))
    if ("pipx", "venvs") in pairs:
        return "a pipx install"
    if ("uv", "tools") in pairs or ("uv", "tool") in pairs:
        return "a uv tool install"
    return "an environment without torch"


@record
class _Candidate:
    path: str
    what: str  # "the project environment ./.venv", ...


def _candidates(host: Host, own: OwnEnvironment, windows: bool) -> list[_Candidate]:
    sep = _sep(windows)
    cwd = host.cwd().rstrip("\\/")
    found: list[_Candidate] = []
    for folder in PROJECT_FOLDERS:
        python = _first(host, env_pythons(f"{cwd}{sep}{folder}", windows))
        if python is not None:
            found.append(_Candidate(python, f"the project environment .{sep}{folder}"))
    base = _conda_base(host, windows)
    if base is not None:
        python = _first(host, env_pythons(base, windows))
        if python is not None:
            found.append(_Candidate(python, f"the conda base environment {base}"))
    name = "python" if windows else "python3"
    python = host.which(name)
    if (
        python is not None
        and not _inside(python, own.prefix, windows)
        and "windowsapps" not in python.lower()
    ):
        found.append(_Candidate(python, f"{name} on PATH"))
    return found


def _conda_base(host: Host, windows: bool) -> str | None:
    """The conda installation's root: from $CONDA_EXE (set by `conda init`), else `conda` on PATH."""
    exe = host.env.get("CONDA_EXE") or host.which("conda")
    if not exe:
        return None
    exe = host.realpath(exe)
    sep = _sep(windows)
    parts = exe.rstrip("\\/").split(sep)
    if len(parts) < 3:
        return None
    return sep.join(parts[:-2])  # <base>/bin/conda, <base>/condabin/conda, <base>\\Scripts\\conda.exe


def implicit(host: Host) -> Interpreter:
    windows = host.platform().system == "Windows"
    stale: list[StaleVariable] = []
    for variable in ACTIVATION_VARIABLES:
        prefix = host.env.get(variable)
        if not prefix:
            continue
        python = _first(host, env_pythons(prefix, windows))
        if python is not None:
            return Interpreter(python, f"the active environment (${variable})", tuple(stale))
        stale.append(StaleVariable(variable, prefix, exists=host.is_dir(prefix)))
    own = host.own_environment()
    if own.has_torch:
        return Interpreter(host.own_python, "the interpreter envdoctor runs in", tuple(stale))
    label = own_label(own)
    for candidate in _candidates(host, own, windows):
        if _inside(candidate.path, own.prefix, windows):
            # envdoctor was installed into the project's own environment: that one is the user's.
            return Interpreter(candidate.path, candidate.what, tuple(stale))
        return Interpreter(
            candidate.path,
            f"{candidate.what}; envdoctor's own environment ({label}) has no torch "
            "(--python chooses another)",
            tuple(stale),
        )
    looked = f".venv, venv, a conda base, {'python' if windows else 'python3'} on PATH"
    return Interpreter(
        host.own_python,
        f"envdoctor's own environment ({label}): no project environment found ({looked}); "
        "create one or name it with --python",
        tuple(stale),
        own_isolated=True,
    )


def explicit(host: Host, given: str) -> Interpreter | str:
    """What --python names: an interpreter, a venv or conda folder, or a command on PATH. A string
    is the one-line error when it names none of these."""
    windows = host.platform().system == "Windows"
    if host.is_dir(given):
        python = _first(host, env_pythons(given, windows))
        if python is None:
            looked = " or ".join(env_pythons(given, windows))
            return f"--python {given}: a folder without a Python interpreter (looked for {looked})"
        return Interpreter(python, f"given with --python ({given})")
    if host.exists(given):
        return Interpreter(given, "given with --python")
    if not any(sep in given for sep in "\\/"):
        found = host.which(given)
        if found is not None:
            return Interpreter(found, f"given with --python ({given} on PATH)")
        return f"--python {given}: no such file, and no command of that name on PATH"
    return f"--python {given}: no such file; expected a Python interpreter or an environment folder"
