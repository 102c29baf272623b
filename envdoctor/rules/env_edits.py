"""Commands and fixes that edit environment variables, written for the user's shell.

One writer per shell, each with one quoting rule, and every rule's variable edit goes through them:
- bash/zsh/sh: `export NAME=value`, the value quoted by shlex.quote (POSIX single quotes);
- fish: `set -gx NAME value`, the same quoting (fish reads '...' literally too);
- PowerShell: `$env:NAME = 'value'`, always single-quoted with '' inside: double quotes would
  expand $ and backticks, and a bare word after = runs as a command;
- cmd: `set "NAME=value"`, the quotes keeping trailing spaces and & | out of the value.

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


# --- bash, zsh, sh ---------------------------------------------------------------------------------


def posix_set(variable: str, value: str) -> str:
    return f"export {variable}={shlex.quote(value)}"


def posix_unset(variable: str) -> str:
    return f"unset {variable}"


# --- fish ------------------------------------------------------------------------------------------


def fish_set(variable: str, *values: str, universal: bool = False) -> str:
    """`set -gx` for this session, `set -Ux` (universal) for good; several values make a list."""
    scope = "-Ux" if universal else "-gx"
    return f"set {scope} {variable} {' '.join(shlex.quote(v) for v in values)}"


def fish_unset(variable: str, *, universal: bool = False) -> str:
    return f"set -e -U {variable}" if universal else f"set -e {variable}"


# --- PowerShell ------------------------------------------------------------------------------------


def powershell_quote(text: str) -> str:
    """A PowerShell single-quoted string (quotes doubled inside)."""
    return "'" + text.replace("'", "''") + "'"


def powershell_assign(variable: str, expression: str) -> str:
    """`$env:NAME = <expression>`: the one place that writes PowerShell's assignment."""
    return f"$env:{variable} = {expression}"


def powershell_set(variable: str, value: str) -> str:
    return powershell_assign(variable, powershell_quote(value))


def powershell_unset(variable: str) -> str:
    return f"Remove-Item Env:{variable}"


def powershell_set_persistent(variable: str, value: str | None, scope: str = "User") -> str:
    """The user (or machine) value, kept across sessions; None removes it."""
    shown = powershell_quote(value) if value is not None else "$null"
    return (
        f"[Environment]::SetEnvironmentVariable({powershell_quote(variable)}, {shown}, "
        f"{powershell_quote(scope)})"
    )


# --- cmd -------------------------------------------------------------------------------------------


def cmd_set(variable: str, value: str) -> str:
    return f'set "{variable}={value}"'


def cmd_unset(variable: str) -> str:
    return f'set "{variable}="'


# --- the shell of this machine ---------------------------------------------------------------------


def set_command(os_name: str, shell: str | None, variable: str, value: str) -> str:
    """Setting `variable` for this session: PowerShell on Windows, else $SHELL's syntax."""
    if os_name == "windows":
        return powershell_set(variable, value)
    return fish_set(variable, value) if shell == "fish" else posix_set(variable, value)


def unset_command(os_name: str, shell: str | None, variable: str) -> str:
    """Removing `variable` for this session: PowerShell on Windows, else $SHELL's syntax."""
    if os_name == "windows":
        return powershell_unset(variable)
    return fish_unset(variable) if shell == "fish" else posix_unset(variable)


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
        listed = ", ".join(powershell_quote(g.rstrip("\\")) for g in gone)
        if duplicates_only:
            keep = "Where-Object { $_ } | Select-Object -Unique"
            what = "remove the repeated entries"
        else:
            keep = f"Where-Object {{ $_ -and $_.TrimEnd('\\') -notin @({listed}) }}"
            what = "remove them"
        quoted = powershell_quote(variable)
        persistent = (
            f"foreach ($scope in 'User', 'Machine') {{ $p = [Environment]::GetEnvironmentVariable("
            f"{quoted}, $scope); if ($p) {{ [Environment]::SetEnvironmentVariable({quoted}, "
            f"(($p -split ';') | {keep}) -join ';', $scope) }} }}"
        )
        value = ";".join(kept)
        # Distinct entries are filtered out of the live value; removing only the repeats of an
        # entry needs the exact remaining value.
        session = (
            powershell_set(variable, value)
            if duplicates_only
            else powershell_assign(variable, f"($env:{variable} -split ';' | {keep}) -join ';'")
        )
        return (
            Fix(
                summary=f"Remove {names} from {variable} {why} in this PowerShell session",
                commands=(session,),
            ),
            Fix(summary="The same in a cmd window", commands=(cmd_set(variable, value),)),
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
    if not kept:
        session = unset_command(os_name, shell, variable)
    elif shell == "fish":
        session = fish_set(variable, *kept)  # fish keeps PATH-like variables as lists
    else:
        session = posix_set(variable, ":".join(kept))
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
    session = (
        set_command(os_name, shell, variable, value)
        if value is not None
        else unset_command(os_name, shell, variable)
    )
    if os_name == "windows":
        cmd = cmd_set(variable, value) if value is not None else cmd_unset(variable)
        return (
            Fix(summary=f"{action} {why} (PowerShell; in cmd: {cmd})", commands=(session,)),
            Fix(
                summary="For good (user scope; a system-wide value needs 'Machine' and an administrator "
                "PowerShell), then open a new terminal",
                commands=(powershell_set_persistent(variable, value),),
            ),
        )
    if shell == "fish":
        persistent = (
            fish_set(variable, value, universal=True)
            if value is not None
            else fish_unset(variable, universal=True)
        )
        return (
            Fix(summary=f"{action} {why}", commands=(session,)),
            Fix(summary="For good (a universal variable)", commands=(persistent,)),
        )
    startup = _posix_startup(shell)
    first_file = startup.split()[0]
    if value is not None:
        persistent = f"echo {shlex.quote(posix_set(variable, value))} >> {first_file}"
        summary = f"For good: add it to {first_file} (and remove older {variable} lines there)"
    else:
        persistent = f"grep -n {shlex.quote(variable)} {startup} /etc/environment 2>/dev/null"
        summary = "For good: delete the line that sets it in your start-up files; this shows where"
    return (
        Fix(summary=f"{action} {why}", commands=(session,)),
        Fix(summary=summary, commands=(persistent,)),
    )
