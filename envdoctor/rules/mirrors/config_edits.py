"""Where a package-tool setting lives, and the commands that change it there.

Shared by the mirrors rules: a setting is shown as "its file, line N" (or the variable), and a fix
edits it with `pip config` when pip can edit that file, with the shell when it is a variable, or
says which line to change by hand.
"""

from __future__ import annotations

from envdoctor.model.findings import Fix
from envdoctor.model.sources import PipConfig, PipSetting
from envdoctor.probes.mirrors import origin_text
from envdoctor.rules.base import RuleContext
from envdoctor.rules.env_edits import set_command, unset_command
from envdoctor.shell import quote

PIP_CONFIG_DOCS = "https://pip.pypa.io/en/stable/topics/configuration/"
CONDA_CONFIG_DOCS = "https://docs.conda.io/projects/conda/en/latest/user-guide/configuration/use-condarc.html"


def python_command(ctx: RuleContext) -> str:
    """The examined interpreter, quoted for the user's shell: fixes run pip through it."""
    return quote(ctx.interpreter.path, ctx.platform.os)


def origin_line(origin: str, line: int | None, home: str | None) -> str:
    """A setting's place for people: the file (with ~ for the home folder) and line, or the variable."""
    text = origin_text(origin, home)
    return f"{text} line {line}" if line else text


def _pip_config_level(pip: PipConfig, path: str) -> str | None:
    """The `pip config --<level>` flag that edits `path`, if pip can edit it.

    pip edits the last file of a level (configuration.py `_get_parser_to_modify`), so a setting in
    /etc/xdg/pip/pip.conf cannot be changed with `pip config --global`.
    """
    for level in ("global", "user", "site"):
        files = [f for f in pip.files if f.level == level]
        if files and files[-1].path == path:
            return level
    return None


def pip_set_commands(
    ctx: RuleContext, pip: PipConfig, setting: PipSetting, items: list[str]
) -> tuple[str, ...]:
    """Commands that leave `setting` holding `items` (none left: removed), where it was set."""
    os_name = ctx.platform.os
    value = " ".join(items)
    if setting.from_env:
        return (
            set_command(os_name, None, setting.origin, value)
            if items
            else unset_command(os_name, None, setting.origin),
        )
    level = _pip_config_level(pip, setting.origin)
    if level is None:
        return ()
    name = f"{setting.section}.{setting.key}"
    if items:
        return (f"{python_command(ctx)} -m pip config --{level} set {name} {quote(value, os_name)}",)
    return (f"{python_command(ctx)} -m pip config --{level} unset {name}",)


def pip_edit_fix(
    ctx: RuleContext, pip: PipConfig, setting: PipSetting, items: list[str], summary: str, home: str | None
) -> Fix:
    """A fix that leaves `setting` holding `items`: the command where one can do it, else the edit."""
    commands = pip_set_commands(ctx, pip, setting, items)
    if setting.from_env:
        summary += f" (also where {setting.origin} is set: shell profile, CI settings)"
    elif not commands:
        place = origin_line(setting.origin, setting.line, home)
        if items:
            summary += f"; by hand: make {place} read `{setting.key} = {' '.join(items)}`"
        else:
            summary += f"; by hand: delete the `{setting.key}` entry at {place}"
    return Fix(summary=summary, commands=commands, link=PIP_CONFIG_DOCS)
