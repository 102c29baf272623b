"""Fixes that edit PATH-like and plain environment variables, written for the user's shell.

Linux and macOS get the shell named by $SHELL (bash/zsh/sh syntax unless it is fish), for this
session and for good; Windows gets PowerShell and cmd for this session and a persistent
PowerShell edit of the user and machine values (the CUDA installer writes the machine PATH).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence

from envdoctor.model import Fix

_STARTUP_FILES = {
    "bash": "~/.bashrc ~/.bash_profile ~/.profile",
    "zsh": "~/.zshrc ~/.zprofile ~/.profile",
    "fish": "~/.config/fish/config.fish",
}
_DEFAULT_STARTUP = "~/.profile ~/.bashrc ~/.zshrc"


def _ps(text: str) -> str:
    """A PowerShell single-quoted string (quotes doubled inside)."""
    return "'" + text.replace("'", "''") + "'"


def _cmd_set(variable: str, value: str) -> str:
    return f'set "{variable}={value}"'


def _posix_startup(shell: str | None) -> str:
    return _STARTUP_FILES.get(shell or "", _DEFAULT_STARTUP)


def path_removal_fixes(
    os_name: str,
    shell: str | None,
    variable: str,
    entries: Sequence[str],
    remove: Iterable[int],
    why: str,
) -> tuple[Fix, ...]:
    """Fixes that drop the entries at positions `remove` from `variable` (PATH, LD_LIBRARY_PATH).

    Removal is by position, so a duplicate goes while its first occurrence stays. `why` finishes
    the sentence "Remove X from PATH ...", e.g. "(a deleted CUDA 10.2 toolkit)".
    """
    drop = set(remove)
    gone = list(dict.fromkeys(entries[i] for i in sorted(drop)))
    kept = [e for i, e in enumerate(entries) if i not in drop]
    duplicates_only = all(g in kept for g in gone)
    names = ", ".join(gone)
    if os_name == "windows":
        listed = ", ".join(_ps(g.rstrip("\\")) for g in gone)
        if duplicates_only:
            keep = "Where-Object { $_ } | Select-Object -Unique"
            what = "remove the repeated entries"
        else:
            keep = f"Where-Object {{ $_ -and $_.TrimEnd('\\') -notin @({listed}) }}"
            what = "remove them"
        persistent = (
            f"foreach ($scope in 'User', 'Machine') {{ $p = [Environment]::GetEnvironmentVariable("
            f"{_ps(variable)}, $scope); if ($p) {{ [Environment]::SetEnvironmentVariable({_ps(variable)}, "
            f"(($p -split ';') | {keep}) -join ';', $scope) }} }}"
        )
        value = ";".join(kept)
        # Distinct entries are filtered out of the live value; removing only the repeats of an
        # entry needs the exact remaining value.
        session = (
            f"$env:{variable} = {_ps(value)}"
            if duplicates_only
            else f"$env:{variable} = ($env:{variable} -split ';' | {keep}) -join ';'"
        )
        return (
            Fix(
                summary=f"Remove {names} from {variable} {why} in this PowerShell session",
                commands=(session,),
            ),
            Fix(summary="The same in a cmd window", commands=(_cmd_set(variable, value),)),
            Fix(
                summary=f"For good: {what} from the user and system values (PowerShell as "
                "administrator, or Settings > System > About > Advanced system settings > "
                "Environment Variables), then open a new terminal",
                commands=(persistent,),
            ),
        )
    startup = _posix_startup(shell)
    pattern = "\\|".join(gone)
    find = f"grep -n {shlex.quote(pattern)} {startup} /etc/environment 2>/dev/null"
    if shell == "fish":
        listed_kept = " ".join(shlex.quote(e) for e in kept)
        session = f"set -gx {variable} {listed_kept}" if kept else f"set -e {variable}"
    else:
        session = f"export {variable}={shlex.quote(':'.join(kept))}" if kept else f"unset {variable}"
    return (
        Fix(summary=f"Remove {names} from {variable} {why} in this shell", commands=(session,)),
        Fix(
            summary=f"For good: delete the line that adds {'the repeat' if duplicates_only else 'them'} "
            f"in your shell start-up files ({startup}); this shows where it is",
            commands=(find,),
        ),
    )


def set_variable_fixes(
    os_name: str, shell: str | None, variable: str, value: str | None, why: str
) -> tuple[Fix, ...]:
    """Fixes that set `variable` to `value`, or remove it when `value` is None."""
    action = f"Set {variable}={value}" if value is not None else f"Unset {variable}"
    if os_name == "windows":
        session = f"$env:{variable} = {_ps(value)}" if value is not None else f"Remove-Item Env:{variable}"
        cmd = _cmd_set(variable, value) if value is not None else f'set "{variable}="'
        persistent = f"[Environment]::SetEnvironmentVariable({_ps(variable)}, " + (
            f"{_ps(value)}, 'User')" if value is not None else "$null, 'User')"
        )
        return (
            Fix(summary=f"{action} {why} (PowerShell; in cmd: {cmd})", commands=(session,)),
            Fix(
                summary="For good (user scope; a system-wide value needs 'Machine' and an administrator "
                "PowerShell), then open a new terminal",
                commands=(persistent,),
            ),
        )
    startup = _posix_startup(shell)
    first_file = startup.split()[0]
    if shell == "fish":
        session = f"set -gx {variable} {shlex.quote(value)}" if value is not None else f"set -e {variable}"
        persistent = (
            f"set -Ux {variable} {shlex.quote(value)}" if value is not None else f"set -e -U {variable}"
        )
        return (
            Fix(summary=f"{action} {why}", commands=(session,)),
            Fix(summary="For good (a universal variable)", commands=(persistent,)),
        )
    session = f"export {variable}={shlex.quote(value)}" if value is not None else f"unset {variable}"
    if value is not None:
        line = f"export {variable}={shlex.quote(value)}"
        persistent = f"echo {shlex.quote(line)} >> {first_file}"
        summary = f"For good: add it to {first_file} (and remove older {variable} lines there)"
    else:
        persistent = f"grep -n {shlex.quote(variable)} {startup} /etc/environment 2>/dev/null"
        summary = "For good: delete the line that sets it in your start-up files; this shows where"
    return (
        Fix(summary=f"{action} {why}", commands=(session,)),
        Fix(summary=summary, commands=(persistent,)),
    )
