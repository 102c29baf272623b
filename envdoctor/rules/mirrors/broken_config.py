"""Configuration files pip, conda or uv reject or hang on (ED506) or silently skip (ED507): bad
syntax, unreadable files, folders, FIFOs, files a variable names that do not exist. A file that
would stop conda while conda is not in use here is a warning (ED507): it breaks conda only once
conda is installed or activated."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.model.findings import Fix, Severity
from envdoctor.model.sources import (
    DIRECTORY,
    MALFORMED,
    MISSING,
    UNREADABLE,
    ConfigFile,
    MirrorFacts,
    file_problem,
    tool_effect,
)
from envdoctor.probes.mirrors import origin_text
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.env_edits import unset_command
from envdoctor.rules.mirrors.config_edits import python_command
from envdoctor.shell import quote
from envdoctor.util.limits import FIFO_REASON

_LEVEL_WORDS = {
    "global": "its global file",
    "user": "its user file",
    "site": "the environment's own file",
    "env": "the file PIP_CONFIG_FILE names",
    "search-path": "a file on its search path",
    "condarc": "the file CONDARC names",
    "project": "the project's file",
    "system": "its system file",
    "config-file": "the file UV_CONFIG_FILE names",
}


def _is_fifo(file: ConfigFile) -> bool:
    return file.status == UNREADABLE and file.error == FIFO_REASON


def _file_effect(file: ConfigFile, conda_in_use: bool) -> str | None:
    """ "fatal" when the tool refuses to run, "hang" when it waits forever, "ignored" when it
    silently skips the file, "dormant" when it would refuse but is not in use here, else None."""
    effect = _tool_effect(file)
    if effect in ("fatal", "hang") and file.tool == "conda" and not conda_in_use:
        return "dormant"
    return effect


def _tool_effect(file: ConfigFile) -> str | None:
    """What the tool itself does with the file (model.sources.tool_effect: the planner reads the
    same answer, so a file this rule calls fatal is one `install` plans nothing around)."""
    effect = tool_effect(file)
    return effect.value if effect is not None else None


def _inspect_command(ctx: RuleContext, tool: str) -> str | None:
    return {
        "pip": f"{python_command(ctx)} -m pip config debug",
        "conda": "conda config --show-sources",
    }.get(tool)


def _move_aside(path: str, os_name: str) -> str:
    if os_name == "windows":
        name = path.replace("/", "\\").rsplit("\\", 1)[-1]
        return f"Rename-Item -Path {quote(path, os_name)} -NewName {quote(name + '.bak', os_name)}"
    return f"mv {quote(path, os_name)} {quote(path + '.bak', os_name)}"


def _commands(tool: str) -> str:
    """The commands a broken file stops, as the tool spells them (uv has no `uv install`)."""
    return {
        "pip": "`pip install`",
        "conda": "`conda install`",
        "uv": "`uv pip install`, `uv sync` and `uv add`",
    }.get(tool, f"`{tool}` command")


def _why(file: ConfigFile) -> str:
    return file_problem(file)


def _broken_files(ctx: RuleContext, effects: tuple[str, ...]) -> Iterator[Hit]:
    facts = ctx.need(MirrorFacts)
    os_name = ctx.platform.os
    for file in (*facts.pip.files, *facts.conda.files, *facts.uv.files):
        effect = _file_effect(file, facts.conda.in_use)
        if effect not in effects:
            continue
        shown = origin_text(file.path, facts.home)
        why = _why(file)
        fixes: list[Fix] = []
        if file.status == MALFORMED:
            fixes.append(
                Fix(
                    summary=f"Correct line {file.line or '?'} of {shown}; to test without it, move it aside",
                    commands=(_move_aside(file.path, os_name),),
                )
            )
        elif file.status == MISSING:
            fixes.append(
                Fix(
                    summary=f"Point {file.named_by} at the file you meant, or unset it",
                    commands=(unset_command(os_name, None, str(file.named_by)),),
                )
            )
        elif file.status == DIRECTORY:
            fixes.append(Fix(summary=f"Remove or rename the folder {shown}; the tool expects a file there"))
        elif _is_fifo(file):
            if file.named_by:
                fixes.append(
                    Fix(
                        summary=f"Point {file.named_by} at a regular file, or unset it",
                        commands=(unset_command(os_name, None, file.named_by),),
                    )
                )
            else:
                fixes.append(Fix(summary=f"Replace the FIFO {shown} with a regular file, or remove it"))
        else:
            fixes.append(Fix(summary=f"Make {shown} readable for this user, or remove it"))
        inspect = _inspect_command(ctx, file.tool)
        if inspect:
            fixes.append(Fix(summary=f"See every file {file.tool} reads", commands=(inspect,)))
        where = f"{file.path} ({_LEVEL_WORDS.get(file.level, file.level)})"
        if effect == "hang":
            title = f"{file.tool} would wait forever reading {shown}: {why}"
            detail = (
                f"{file.tool} opens {where} and reads it to the end; a FIFO gives no data until "
                f"some program writes to it, so every {_commands(file.tool)} hangs instead of running."
            )
        elif effect == "fatal":
            title = f"{file.tool} cannot use its configuration file {shown}: {why}"
            detail = (
                f"{file.tool} reads {where} and stops with an error, so every "
                f"{_commands(file.tool)} fails until the file is fixed."
            )
        elif effect == "dormant":
            title = f"{file.tool} would fail on its configuration file {shown} once in use: {why}"
            detail = (
                f"{file.tool} is not in use here, so nothing fails today; once it is installed or "
                f"activated it reads {where} and every {_commands(file.tool)} fails until the file "
                "is fixed."
            )
        else:
            title = f"{file.tool} silently skips {shown}: {why}"
            detail = (
                f"{file.tool} would read {file.path} ({_LEVEL_WORDS.get(file.level, file.level)}) but "
                "skips it without a word, so the "
                "index, mirror or constraint settings written there do not apply."
            )
        yield Hit(
            title=title,
            detail=detail,
            evidence=(f"{file.tool} file {file.path}: {file.status}",),
            fixes=tuple(fixes),
        )


@rule(
    code="ED506",
    name="package-config-unusable",
    severity=Severity.ERROR,
    summary="pip, conda or uv refuses to run because of a broken configuration file",
    needs=(MirrorFacts,),
    doc=RuleDoc(
        what="Every configuration file on the tools' search paths: INI syntax for pip, YAML "
        "syntax and value types for conda, TOML for uv, plus files named by UV_CONFIG_FILE that "
        "do not exist, files conda or uv cannot open, and FIFOs (pip and uv wait on them forever).",
        why='pip ("Configuration file could not be loaded"), conda and uv stop at such a file, '
        "and pip and uv wait forever on a FIFO, so no install works, whatever the command line says.",
        fix="Correct the named line, or move the file aside to confirm it is the cause.",
        example="pip.conf without a [global] header: `index-url = ...` on line 1.",
    ),
)
def package_config_unusable(ctx: RuleContext) -> Iterator[Hit]:
    return _broken_files(ctx, ("fatal", "hang"))


@rule(
    code="ED507",
    name="package-config-ignored",
    severity=Severity.WARNING,
    summary="a configuration file is silently skipped, so its settings do not apply",
    needs=(MirrorFacts,),
    doc=RuleDoc(
        what="pip files that are unreadable or are folders (configparser skips them silently), "
        "PIP_CONFIG_FILE or CONDARC naming a file that does not exist, a pyproject.toml uv cannot "
        "parse (uv warns and moves on), an unreadable uv user file, and a broken conda file while "
        "conda is not in use here (it breaks conda once conda is installed or activated).",
        why="The mirror, index or constraint you configured is not used, and nothing says so.",
        fix="Fix the permissions, replace the folder by a file, or point the variable at the right file.",
        example="PIP_CONFIG_FILE=~/pip.conf exported in .bashrc while the file is ~/.pip/pip.conf.",
    ),
)
def package_config_ignored(ctx: RuleContext) -> Iterator[Hit]:
    return _broken_files(ctx, ("ignored", "dormant"))
