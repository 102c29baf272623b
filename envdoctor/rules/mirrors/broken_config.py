"""Configuration files pip, conda or uv reject (ED506) or silently skip (ED507): bad syntax,
unreadable files, folders, files a variable names that do not exist."""

from __future__ import annotations

from collections.abc import Iterator

from envdoctor.model import Fix, Severity
from envdoctor.probes.mirrors import (
    DIRECTORY,
    MALFORMED,
    MISSING,
    UNREADABLE,
    ConfigFile,
    MirrorFacts,
    origin_text,
)
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.env_edits import unset_command
from envdoctor.rules.mirrors.config_edits import python_command
from envdoctor.shell import quote

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


def _file_effect(file: ConfigFile) -> str | None:
    """ "fatal" when the tool refuses to run, "ignored" when it silently skips the file, else None.

    pip reads with configparser.read(), which skips files it cannot open but aborts on a syntax
    error; conda opens every file on its search path and aborts on bad YAML; uv aborts on a bad
    uv.toml but only warns about a bad pyproject.toml and skips an unreadable user file.
    """
    status = file.status
    if status == MISSING:
        if not file.named_by:
            return None
        return "fatal" if file.tool == "uv" else "ignored"
    if status == MALFORMED:
        if file.tool == "uv" and file.path.endswith("pyproject.toml"):
            return "ignored"
        return "fatal"
    if status in (UNREADABLE, DIRECTORY):
        if file.tool == "pip" or (file.tool == "uv" and file.level == "user"):
            return "ignored"
        return "fatal"
    return None


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


def _why(file: ConfigFile) -> str:
    if file.status == MALFORMED:
        return f"line {file.line}: {file.error}" if file.line else str(file.error)
    if file.status == MISSING:
        return f"{file.named_by} names it, but there is no such file"
    if file.status == DIRECTORY:
        return "it is a folder, not a file"
    return f"it cannot be read ({file.error})"


def _broken_files(ctx: RuleContext, effect: str) -> Iterator[Hit]:
    facts = ctx.need(MirrorFacts)
    os_name = ctx.platform.os
    for file in (*facts.pip.files, *facts.conda.files, *facts.uv.files):
        if _file_effect(file) != effect:
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
        else:
            fixes.append(Fix(summary=f"Make {shown} readable for this user, or remove it"))
        inspect = _inspect_command(ctx, file.tool)
        if inspect:
            fixes.append(Fix(summary=f"See every file {file.tool} reads", commands=(inspect,)))
        if effect == "fatal":
            title = f"{file.tool} cannot use its configuration file {shown}: {why}"
            detail = (
                f"{file.tool} reads {file.path} ({_LEVEL_WORDS.get(file.level, file.level)}) and stops "
                "with an error, so every "
                f"`{file.tool} install` fails until the file is fixed."
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
        "do not exist and files conda or uv cannot open.",
        why='pip ("Configuration file could not be loaded"), conda and uv stop at such a file, '
        "so no install works, whatever the command line says.",
        fix="Correct the named line, or move the file aside to confirm it is the cause.",
        example="pip.conf without a [global] header: `index-url = ...` on line 1.",
    ),
)
def package_config_unusable(ctx: RuleContext) -> Iterator[Hit]:
    return _broken_files(ctx, "fatal")


@rule(
    code="ED507",
    name="package-config-ignored",
    severity=Severity.WARNING,
    summary="a configuration file is silently skipped, so its settings do not apply",
    needs=(MirrorFacts,),
    doc=RuleDoc(
        what="pip files that are unreadable or are folders (configparser skips them silently), "
        "PIP_CONFIG_FILE or CONDARC naming a file that does not exist, a pyproject.toml uv cannot "
        "parse (uv warns and moves on), an unreadable uv user file.",
        why="The mirror, index or constraint you configured is not used, and nothing says so.",
        fix="Fix the permissions, replace the folder by a file, or point the variable at the right file.",
        example="PIP_CONFIG_FILE=~/pip.conf exported in .bashrc while the file is ~/.pip/pip.conf.",
    ),
)
def package_config_ignored(ctx: RuleContext) -> Iterator[Hit]:
    return _broken_files(ctx, "ignored")
