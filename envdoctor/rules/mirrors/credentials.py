"""Index passwords and tokens written into pip, conda and uv configuration files (ED505).

envdoctor masks such values as **** in all its output (envdoctor/util/redact.py); this rule says
where they are and how to move them out of the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

from envdoctor.model.findings import Fix, Severity
from envdoctor.model.sources import MirrorFacts, is_variable
from envdoctor.probes.mirrors import origin_text
from envdoctor.rules.base import Hit, RuleContext, RuleDoc, rule
from envdoctor.rules.env_edits import set_command
from envdoctor.rules.mirrors.config_edits import CONDA_CONFIG_DOCS, origin_line, pip_set_commands
from envdoctor.rules.mirrors.urls import without_credentials
from envdoctor.util.redact import has_secret, redact_text

PIP_AUTH_DOCS = "https://pip.pypa.io/en/stable/topics/authentication/"
UV_INDEX_DOCS = "https://docs.astral.sh/uv/concepts/indexes/"


def _secrets_in_files(facts: MirrorFacts) -> Iterator[tuple[str, str, str, str, int | None]]:
    """(tool, setting, value, file, line) for each configured value carrying a credential."""
    for setting in facts.pip.settings:
        if not setting.from_env and has_secret(setting.value):
            for url in setting.items:
                if has_secret(url):
                    yield "pip", f"{setting.section}.{setting.key}", url, setting.origin, setting.line
    for conda_setting in facts.conda.settings:
        if is_variable(conda_setting.origin):
            continue
        values = list(conda_setting.items) + [u for _, u in conda_setting.pairs]
        values += [conda_setting.value] if conda_setting.value else []
        for value in values:
            if has_secret(value):
                yield "conda", conda_setting.key, value, conda_setting.origin, conda_setting.line
    for index in facts.uv.indexes:
        if is_variable(index.origin) or not has_secret(index.url):
            continue
        yield (
            "uv",
            index.via if not index.name else f"index {index.name}",
            index.url,
            index.origin,
            index.line,
        )


@rule(
    code="ED505",
    name="index-credentials-in-plain-text",
    severity=Severity.WARNING,
    summary="a configuration file holds an index password or token in plain text",
    needs=(MirrorFacts,),
    doc=RuleDoc(
        what="URLs in pip files, .condarc files and uv.toml/pyproject.toml with user:password@, "
        "token@, a conda /t/<token>/ segment or a secret-looking query parameter. Environment "
        "variables are the recommended place and are not flagged. envdoctor itself masks every "
        "such value as **** in all its output.",
        why="Configuration files get copied, backed up, shared and committed; `pip config list` "
        "prints the values unredacted.",
        fix="Keep the bare URL in the file and move the login to the keyring or ~/.netrc (pip), "
        "UV_INDEX_<NAME>_USERNAME/PASSWORD (uv), or the issuing tool's token store (conda).",
        example="pip.conf: extra-index-url = https://__token__:glpat-...@gitlab.example.com/api/v4/"
        "projects/1/packages/pypi/simple",
    ),
)
def index_credentials_in_plain_text(ctx: RuleContext) -> Iterator[Hit]:
    facts = ctx.need(MirrorFacts)
    os_name = ctx.platform.os
    for tool, setting, value, path, line in _secrets_in_files(facts):
        clean = without_credentials(value)
        host = urlsplit(clean).hostname or "the index host"
        where = origin_line(path, line, facts.home)
        if tool == "pip":
            section, key = setting.split(".", 1)
            stored = next(
                (s for s in facts.pip.settings if s.origin == path and s.section == section and s.key == key),
                None,
            )
            commands: tuple[str, ...] = ()
            if stored is not None:
                items = [clean if u == value else u for u in stored.items]
                commands = pip_set_commands(ctx, facts.pip, stored, items)
            fix = Fix(
                summary=f"Keep {clean} in the file and let pip take the login from the keyring or ~/.netrc "
                f"(a line `machine {host} login USER password TOKEN`)",
                commands=commands,
                link=PIP_AUTH_DOCS,
            )
        elif tool == "uv":
            name = setting.split(" ", 1)[1] if setting.startswith("index ") else None
            variable = (name or "NAME").upper().replace("-", "_")
            fix = Fix(
                summary=f"Keep url = {clean} in the file (give the index a name if it has none) and pass "
                "the login through variables uv reads",
                commands=(
                    set_command(os_name, None, f"UV_INDEX_{variable}_USERNAME", "USER"),
                    set_command(os_name, None, f"UV_INDEX_{variable}_PASSWORD", "TOKEN"),
                ),
                link=UV_INDEX_DOCS,
            )
        else:
            fix = Fix(
                summary=f"Replace it with {clean} and log in with the tool that issued the token (for "
                "anaconda.org: `anaconda login`), so the token lives in its token store",
                link=CONDA_CONFIG_DOCS,
            )
        yield Hit(
            title=f"a password or token for {host} is written in {origin_text(path, facts.home)}",
            detail=f"{tool} {setting} in {where} carries credentials in plain text ({redact_text(value)}). "
            "Anyone who can read the file, a backup, or a shared or committed copy of it can use them; "
            "`pip config list` and `pip config debug` print them unredacted.",
            evidence=(f"{tool} {setting} ({where}) has credentials in its URL",),
            fixes=(fix,),
        )
