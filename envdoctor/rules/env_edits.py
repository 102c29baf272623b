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

from envdoctor.model.findings import Fix

_STARTUP_FILES = {
    "bash": "~/.bashrc ~/.bash_profile ~/.profile",
    "zsh": "~/.zshrc ~/.zprofile ~/.profile",
    "fish": "~/.config/fish/config.fish",
}
_DEFAULT_STARTUP = "~/.profile ~/.bashrc ~/.zshrc"

# Folders every program on the machine relies on: a fix never takes them off PATH or the loader
# path (a CUDA wrapper script in /usr/local/bin is not a reason to lose everything else there).
_POSIX_SYSTEM_FOLDERS = frozenset(
    {
        "/bin",
        "/sbin",
        "/usr/bin",
        "/usr/sbin",
        "/usr/local/bin",
        "/usr/local/sbin",
        "/usr/games",
        "/usr/local/games",
        "/snap/bin",
        "/opt/homebrew/bin",
        "/lib",
        "/lib64",
        "/usr/lib",
        "/usr/lib64",
        "/usr/local/lib",
        "/usr/local/lib64",
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/lib/x86_64-linux-gnu",
        "/lib/aarch64-linux-gnu",
        "/usr/lib/wsl/lib",
    }
)


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


def is_system_folder(os_name: str, entry: str) -> bool:
    """A general system folder (/usr/local/bin, C:\\Windows\\System32 ...), never to be removed."""
    if os_name == "windows":
        folder = entry.strip().strip('"').replace("/", "\\").rstrip("\\").lower()
        if folder.startswith("%systemroot%"):
            return True
        # C:\Windows and everything under it (System32, Wbem, WindowsPowerShell, OpenSSH ...).
        under = folder[3:] if folder[1:3] == ":\\" else ""
        return under == "windows" or under.startswith("windows\\")
    folder = "/" + "/".join(part for part in entry.strip().split("/") if part)
    return folder in _POSIX_SYSTEM_FOLDERS


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
    spared = [
        i
        for i in sorted(set(remove))
        if is_system_folder(os_name, entries[i])
        and entries[i] not in [e for j, e in enumerate(entries) if j < i]
    ]
    drop = set(remove) - set(spared)
    if not drop:
        return (_spared_fix(os_name, variable, [entries[i] for i in spared]),) if spared else ()
    extra = (_spared_fix(os_name, variable, [entries[i] for i in spared]),) if spared else ()
    return _removal_fixes(os_name, shell, variable, entries, drop, why) + extra


def _spared_fix(os_name: str, variable: str, spared: Sequence[str]) -> Fix:
    names = ", ".join(dict.fromkeys(spared))
    return Fix(
        summary=f"Leave {names} on {variable}: other programs need it. Move or rename the "
        "conflicting file in it instead (if you put it there)",
    )


def _removal_fixes(
    os_name: str,
    shell: str | None,
    variable: str,
    entries: Sequence[str],
    drop: set[int],
    why: str,
) -> tuple[Fix, ...]:
    gone = list(dict.fromkeys(entries[i] for i in sorted(drop)))
    kept = [e for i, e in enumerate(entries) if i not in drop]
    # Entries that go entirely, and whether some only lose their repeats (the first one stays).
    whole = [g for g in gone if g not in kept]
    repeats = len(whole) < len(gone)
    duplicates_only = not whole
    names = ", ".join(gone)
    if os_name == "windows":
        what = "remove the repeated entries" if duplicates_only else "remove them"
        quoted = powershell_quote(variable)
        persistent = (
            f"foreach ($scope in 'User', 'Machine') {{ $p = [Environment]::GetEnvironmentVariable("
            f"{quoted}, $scope); if ($p) {{ [Environment]::SetEnvironmentVariable({quoted}, "
            f"{powershell_filter('$p', whole, repeats)}, $scope) }} }}"
        )
        fixes = [
            Fix(
                summary=f"Remove {names} from {variable} {why} in this PowerShell session",
                commands=(powershell_removal(variable, whole, repeats),),
            )
        ]
        cmd = cmd_removal(variable, whole, repeats)
        if cmd is not None:
            fixes.append(Fix(summary="The same in a cmd window", commands=(cmd,)))
        fixes.append(
            Fix(
                summary=f"For good: {what} from the user and system values (PowerShell as "
                "administrator, or Settings > System > About > Advanced system settings > "
                "Environment Variables), then open a new terminal",
                commands=(persistent,),
            )
        )
        return tuple(fixes)
    startup = _posix_startup(shell)
    pattern = "\\|".join(gone)
    find = f"grep -n {shlex.quote(pattern)} {startup} /etc/environment 2>/dev/null"
    removal = fish_removal if shell == "fish" else posix_removal
    session = removal(variable, whole, repeats)
    return (
        Fix(summary=f"Remove {names} from {variable} {why} in this shell", commands=(session,)),
        Fix(
            summary=f"For good: delete the line that adds {'the repeat' if duplicates_only else 'them'} "
            f"in your shell start-up files ({startup}); this shows where it is",
            commands=(find,),
        ),
    )


# --- edits relative to the live value --------------------------------------------------------------
# Every removal filters the named entries out of the variable's value at the time it runs, never
# assigns a snapshot of the whole value: several findings' edits of one variable then compose in any
# order (a snapshot computed from the original value would put back what an earlier edit removed).
# `whole` are the entries that go entirely; `repeats` drops later repeats of any entry (the first
# occurrence wins a lookup, so dropping repeats never changes what is found).


def posix_filter(value: str, whole: Sequence[str], repeats: bool) -> str:
    """A POSIX sh pipeline printing `value` (a shell word) split on ':', filtered, one per line."""
    stages = [f"printf '%s' {value}", "tr ':' '\\n'"]
    if whole:
        stages.append("grep -vxF " + " ".join(f"-e {shlex.quote(w)}" for w in whole))
    if repeats:
        stages.append("awk '!seen[$0]++'")
    return " | ".join(stages)


def posix_removal(variable: str, whole: Sequence[str], repeats: bool) -> str:
    """bash/zsh/sh: `export V="$(... | paste -sd: -)"`, the entries filtered out of the live value."""
    live = f'"${variable}"'
    return f'export {variable}="$({posix_filter(live, whole, repeats)} | paste -sd: -)"'


def fish_removal(variable: str, whole: Sequence[str], repeats: bool) -> str:
    """fish keeps variables named *PATH as lists: one element per line in, the filtered list out."""
    stages = [f"printf '%s\\n' ${variable}"]
    if whole:
        stages.append("grep -vxF " + " ".join(f"-e {shlex.quote(w)}" for w in whole))
    if repeats:
        stages.append("awk '!seen[$0]++'")
    return f"set -gx {variable} ({' | '.join(stages)})"


def powershell_filter(value: str, whole: Sequence[str], repeats: bool) -> str:
    """A PowerShell expression: `value` split on ';', without empty entries and the `whole` ones
    (compared without a trailing backslash and, like Windows, case-insensitively), joined again."""
    keep = "$_"
    if whole:
        listed = ", ".join(powershell_quote(w.rstrip("\\")) for w in whole)
        keep = f"$_ -and $_.TrimEnd('\\') -notin @({listed})"
    unique = " | Select-Object -Unique" if repeats else ""
    return f"(({value} -split ';') | Where-Object {{ {keep} }}{unique}) -join ';'"


def powershell_removal(variable: str, whole: Sequence[str], repeats: bool) -> str:
    return powershell_assign(variable, powershell_filter(f"$env:{variable}", whole, repeats))


def cmd_removal(variable: str, whole: Sequence[str], repeats: bool) -> str | None:
    """cmd cannot filter a list in one line (%V% expands once per line, before any edit on it), so
    PowerShell computes the value from cmd's live one and `for /f` assigns it. None when an entry
    holds a character cmd would expand or end the quoted command at (% or ")."""
    if any(c in w for w in whole for c in '%"'):
        return None
    expression = powershell_filter(f"$env:{variable}", whole, repeats)
    run = f'powershell -NoProfile -Command "{expression}"'
    return f'for /f "delims=" %p in (\'{run}\') do @set "{variable}=%p"'


def prepend_command(os_name: str, shell: str | None, variable: str, entry: str) -> str:
    """Putting `entry` first on `variable` for this session, relative to its live value."""
    if os_name == "windows":
        return powershell_assign(variable, f"{powershell_quote(entry + ';')} + $env:{variable}")
    if shell == "fish":
        return f"set -gx {variable} {shlex.quote(entry)} ${variable}"
    return f'export {variable}={shlex.quote(entry)}:"${variable}"'


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
