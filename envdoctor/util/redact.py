"""Secrets never leave: credentials in URLs and secret-looking variables are masked everywhere.

Applied to the whole report (facts included) before any renderer or snapshot writer sees it, so
no output format can forget it.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from envdoctor.util.lazy_re import Lazy

T = TypeVar("T")
MASK = "****"

# Every pattern here runs in time linear in the text: values come from files and variables anyone
# can write, and a 120 KB value must not cost seconds (no nested or overlapping repetition; the
# URL credential scan is str.splitlines/split/rfind, see _mask_userinfo).

# Where a conda URL ends when looking for its /t/<token> segment.
_URL_END = Lazy(r"[\s'\"]")
# conda's token form: https://conda.anaconda.org/t/<token>/channel, also at the end of a
# channel_alias (https://conda.anaconda.org/t/<token>), where no slash follows.
_CONDA_TOKEN = Lazy(r"(/t/)([^/\s'\"]+)(?=/|[\s'\"]|$)")
# ?name=value / &name=value. The name class excludes the separators, so each attempt stops at the
# next one: linear.
_QUERY_PARAM = Lazy(r"([?&;])([A-Za-z0-9_.\-\[\]]+)=([^&#\s]*)")
# Punctuation that ends a sentence around a value rather than belonging to it.
_TRAILING = ":,;.)]}>'\""
_SECRET_PARAM_WORD = Lazy(r"token|secret|pass|pwd|key|auth|sig|credential", re.IGNORECASE)
# name=value in free text (a command, an error message, an ini line): NAME = value. The look-behind
# keeps a name from starting inside another word, so each position is tried once.
_ASSIGNMENT = Lazy(r"(?<![\w.\-])(-{0,2}[A-Za-z][\w.\-]{0,63})([ \t]*=[ \t]*)([^\s&#,;]+)")

# Well-known token shapes, masked wherever they stand (a value in free text, an error message):
# GitHub (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_), GitLab (glpat-), Hugging Face (hf_), OpenAI
# style (sk-), Slack (xox?-) and AWS access key ids (AKIA/ASIA). The look-behind keeps a match
# from starting inside a word, so each run of characters is scanned once: linear.
_TOKEN_SHAPE = Lazy(
    r"(?<![A-Za-z0-9_\-])(gh[pousr]_|github_pat_|glpat-|hf_|sk-|xox[abprs]-)[A-Za-z0-9_\-]{20,}"
    r"|(?<![A-Za-z0-9])(AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"
)
# An HTTP credential: "Authorization: <scheme> VALUE" (any scheme) and "Bearer VALUE" anywhere.
_AUTH_HEADER = Lazy(
    r"(?i)((?<![\w\-])authorization[ \t]*:[ \t]*(?:(?:bearer|basic|token|digest)[ \t]+)?"
    r"|(?<![\w\-])bearer[ \t]+)([^\s,;'\"]+)"
)
# "password: VALUE" in free text: a name, a colon, then the value (found separately, see
# _mask_colon_secrets). "//" after the colon is a URL, not a value.
_COLON_NAME = Lazy(r"(?<![\w.\-])([A-Za-z][\w.\-]{0,63})[ \t]*:[ \t]*(?=[^\s/])")
_VALUE = Lazy(r"[^\s&#,;]+")

# Names that say "secret": anywhere in the name ...
_SECRET_PART = Lazy(
    r"TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|COOKIE|SESSION",
    re.IGNORECASE,
)
# ... or as one whole word of it (pass, pwd, key, auth: too short to look for inside words such
# as "keyring" or "compass").
_SECRET_WORDS = frozenset({"pass", "pwd", "key", "auth", "authorization", "authtoken", "pat"})
_WORD_SPLIT = Lazy(r"[^A-Za-z0-9]+")
# Variables with a secret-looking word that hold none: the shell's working folders (exact case:
# a lowercase pwd key in a config file is a password).
_NOT_SECRET_NAMES = frozenset({"PWD", "OLDPWD"})
# A dataclass whose `key` field names a secret (pip.conf's `password = ...`) has these masked.
_VALUE_FIELDS = ("value", "items", "pairs")


def _mask_userinfo(text: str, keep_user: bool) -> str:
    """scheme://USERINFO@host -> scheme://user:****@host (or ****@host), whatever USERINFO holds.

    The credentials run from "://" to the last "@" before the line ends or the next URL starts:
    quotes, "<", ">", an unencoded "/", tabs or a BOM in a password are masked with it. A path
    that holds an "@" later on the line is masked too: showing too little beats leaking a secret.
    Lines and URLs are cut with str.splitlines and str.split, so the work is linear.
    """
    if "://" not in text:
        return text
    lines = text.splitlines(keepends=True)
    for number, line in enumerate(lines):
        if "://" not in line:
            continue
        parts = line.split("://")
        for index in range(1, len(parts)):  # each part: after one "://", up to the next
            part = parts[index]
            at = part.rfind("@")
            if at >= 0:
                user, colon, _ = part[:at].partition(":")
                parts[index] = (f"{user}:{MASK}" if keep_user and colon else MASK) + part[at:]
        lines[number] = "://".join(parts)
    return "".join(lines)


def _split_tail(value: str) -> tuple[str, str]:
    """(secret, punctuation after it): "tok3n:" in "--mirror x?token=tok3n: expected ..." keeps
    the sentence's colon outside the mask."""
    secret = value.rstrip(_TRAILING)
    return secret, value[len(secret) :]


def _query(match: re.Match[str]) -> str:
    name = match.group(2)
    value, tail = _split_tail(match.group(3))
    if value and value != MASK and (_SECRET_PARAM_WORD.search(name) or is_secret_name(name)):
        return f"{match.group(1)}{name}={MASK}{tail}"
    return match.group(0)


def _assignment(match: re.Match[str]) -> str:
    name = match.group(1)
    value, tail = _split_tail(match.group(3))
    if value and value != MASK and is_secret_name(name.lstrip("-")):
        return f"{name}{match.group(2)}{MASK}{tail}"
    return match.group(0)


def _token_shape(match: re.Match[str]) -> str:
    return (match.group(1) or match.group(2)) + MASK  # the prefix says which kind of token it was


def _auth_header(match: re.Match[str]) -> str:
    value, tail = _split_tail(match.group(2))
    if not value or value == MASK:
        return match.group(0)
    return f"{match.group(1)}{MASK}{tail}"


def _mask_colon_secrets(text: str) -> str:
    """NAME: VALUE with a name that says secret (password, token, api_key ...) -> NAME: ****.

    Only the long secret words count here (_SECRET_PART): "key: x" and "auth: x" are too common
    in ordinary messages. Each search starts where the last match or value ended: linear.
    """
    if ":" not in text:
        return text
    out: list[str] = []
    done = pos = 0
    while True:
        match = _COLON_NAME.search(text, pos)
        if match is None:
            break
        pos = match.end()
        if match.group(1) in _NOT_SECRET_NAMES or not _SECRET_PART.search(match.group(1)):
            continue
        found = _VALUE.match(text, pos)
        if found is None:
            continue
        value, _ = _split_tail(found.group(0))
        if value and value != MASK:
            out.append(text[done:pos])
            out.append(MASK)
            done = pos + len(value)
        pos = found.end()
    out.append(text[done:])
    return "".join(out)


# Secret values seen at their source (the environment at start-up, each package-manager file as it
# is read), masked wherever they appear later, in whatever shape: "nonnumeric port: 'tok3n@host'"
# from a URL library has no "://" left for the patterns to find.
_LEARNED: set[str] = set()
_LEARNED_ORDER: list[str] = []  # longest first, so that a secret inside a longer one goes too
_MIN_URL_SECRET = 4  # shorter passwords would mask ordinary words; the patterns still find them
_MIN_NAMED_SECRET = 6  # a value of a secret-named setting: "true" or "1" is no secret


def _learn_one(secret: str, shortest: int) -> None:
    secret = secret.strip()
    if len(secret) < shortest or secret in _LEARNED or MASK in secret:
        return
    _LEARNED.add(secret)
    _LEARNED_ORDER[:] = sorted(_LEARNED, key=len, reverse=True)


def learn(text: str) -> None:
    """Remember the credentials `text` holds (URL passwords and tokens, conda's /t/ tokens, the
    values of `password = ...`-style settings), to mask them literally from now on."""
    if "://" in text:
        for line in text.splitlines():
            parts = line.split("://")
            for part in parts[1:]:
                end = min((i for i in (part.find("?"), part.find("#")) if i >= 0), default=len(part))
                at = part.rfind("@", 0, end)
                if at >= 0:
                    user, colon, password = part[:at].partition(":")
                    _learn_one(password if colon else user, _MIN_URL_SECRET)
        if "/t/" in text:
            for match in _CONDA_TOKEN.finditer(text):
                _learn_one(match.group(2), _MIN_URL_SECRET)
    for match in _QUERY_PARAM.finditer(text):
        if _SECRET_PARAM_WORD.search(match.group(2)) or is_secret_name(match.group(2)):
            _learn_one(match.group(3), _MIN_URL_SECRET)
    for match in _ASSIGNMENT.finditer(text):
        if is_secret_name(match.group(1).lstrip("-")):
            _learn_one(match.group(3), _MIN_NAMED_SECRET)


def learn_environment(environ: Mapping[str, str]) -> None:
    """The credentials in every variable's value, and the values of secret-named variables."""
    for name, value in environ.items():
        learn(value)
        if is_secret_name(name):
            _learn_one(value, _MIN_NAMED_SECRET)


def learned() -> frozenset[str]:
    """The secret values learned so far in this process."""
    return frozenset(_LEARNED)


def relearn(secrets: frozenset[str]) -> None:
    """Exactly `secrets` as the learned values: for a process that examines one situation after
    another (a test suite), so that what one situation's files taught masks nothing in the next."""
    _LEARNED.clear()
    _LEARNED.update(secrets)
    _LEARNED_ORDER[:] = sorted(_LEARNED, key=len, reverse=True)


def _mask_learned(text: str) -> str:
    for secret in _LEARNED_ORDER:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def redact_text(text: str) -> str:
    if _LEARNED_ORDER:
        text = _mask_learned(text)
    text = _mask_userinfo(text, keep_user=True)
    text = _CONDA_TOKEN.sub(lambda m: f"{m.group(1)}{MASK}", text)
    text = _QUERY_PARAM.sub(_query, text)
    text = _ASSIGNMENT.sub(_assignment, text)
    text = _AUTH_HEADER.sub(_auth_header, text)
    text = _TOKEN_SHAPE.sub(_token_shape, text)
    return _mask_colon_secrets(text)


def _has_userinfo(text: str) -> bool:
    """Whether an "@" follows a "://" on its line (masked credentials count too)."""
    if "://" not in text:
        return False
    return any("@" in part for line in text.splitlines() for part in line.split("://")[1:])


def _has_conda_token(text: str) -> bool:
    """An http(s) URL with a /t/<token> segment (elsewhere /t/ is an ordinary folder)."""
    if "://" not in text or "/t/" not in text:
        return False
    parts = text.split("://")
    for index in range(1, len(parts)):
        if not parts[index - 1][-5:].lower().endswith(("http", "https")):
            continue
        part = parts[index]
        stop = _URL_END.search(part)
        url = part if stop is None else part[: stop.start()]
        segment = url.find("/t/")
        if segment >= 0 and segment + 3 < len(url) and url[segment + 3] != "/":
            return True
    return False


def has_secret(text: str) -> bool:
    """Whether `text` carries a credential redact_text would mask, masked already or not.

    A conda /t/ segment counts only in an http(s) URL: elsewhere it is an ordinary folder.
    """
    if _has_userinfo(text) or _has_conda_token(text):
        return True
    return any(
        _SECRET_PARAM_WORD.search(m.group(2)) or is_secret_name(m.group(2))
        for m in _QUERY_PARAM.finditer(text)
        if m.group(3)
    )


def is_secret_name(name: str) -> bool:
    """Whether a variable, setting key or query parameter name says it holds a secret."""
    if name in _NOT_SECRET_NAMES:
        return False
    if _SECRET_PART.search(name):
        return True
    return any(word.lower() in _SECRET_WORDS for word in _WORD_SPLIT.split(name))


def one_line(message: str) -> str:
    """A message fit for one line on stderr: line breaks and control characters escaped, then
    credentials masked (escaping first keeps a line break inside a password from hiding it)."""
    if message.isprintable():  # the usual case, checked at C speed
        return redact_text(message)
    escaped = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in message)
    return redact_text(escaped)


def redact(value: T) -> T:
    """A copy of `value` (dataclasses, tuples, lists, mappings, strings) with secrets masked."""
    return _redact(value, redact_text)  # type: ignore[no-any-return]


def _redact(value: Any, text: Callable[[str], str]) -> Any:
    if isinstance(value, enum.Enum):  # str-valued enums are values, not text to mask
        return value
    if isinstance(value, str):
        return text(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        key = getattr(value, "key", None)
        secret = isinstance(key, str) and is_secret_name(key)
        changes = {
            f.name: _mask_all(getattr(value, f.name))
            if secret and f.name in _VALUE_FIELDS
            else _redact(getattr(value, f.name), text)
            for f in dataclasses.fields(value)
            if f.init
        }
        return type(value)(**changes)
    if isinstance(value, tuple):
        return tuple(_redact(v, text) for v in value)
    if isinstance(value, list):
        return [_redact(v, text) for v in value]
    if isinstance(value, Mapping):
        return {
            k: (MASK if isinstance(k, str) and is_secret_name(k) and v else _redact(v, text))
            for k, v in value.items()
        }
    return value


def _mask_all(value: Any) -> Any:
    """Every non-empty string in `value` masked: the value of a setting whose name says secret."""
    if isinstance(value, str):
        return MASK if value else value
    if isinstance(value, tuple):
        return tuple(_mask_all(v) for v in value)
    return value


# --- opt-in, for output meant to be shared (`envdoctor report`) -----------------------------------

USER = "<user>"
GPU_UUID_MASK = "GPU-<uuid>"
# GPU-5f9e1c2a-... and MIG-5f9e1c2a-... as NVML and nvidia-smi -L print them.
_GPU_UUID = Lazy(
    r"\b(?:GPU|MIG)-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)
# The user-name segment of home folders: /home/NAME, /Users/NAME, C:\Users\NAME, /mnt/c/Users/NAME.
_HOME_SEGMENT = Lazy(
    r"(?P<head>/home/|/Users/|/mnt/[a-z]/Users/|[A-Za-z]:\\Users\\)"
    # Windows names may hold spaces ("C:\Users\Ada Lovelace\..."): taken whole when a "\" follows.
    r"(?P<name>[^\\/:'\"\n]+(?=\\)|[^/\\\s'\"]+)"
)
_END_OF_SEGMENT = r"(?=[/\\\s'\"]|$)"
_NOT_PERSONAL = {USER, "Public", "Default", "All Users", "Shared"}


def redact_private_text(text: str, homes: Sequence[str] = ()) -> str:
    """`redact_text`, plus URL user names, GPU UUIDs and the user name in home folders masked.

    `homes` are home folders in other places (HOME=/data/alice): their last part is masked too.
    """
    # The user part of URL credentials names a person too: user:****@ becomes ****@.
    text = redact_text(_mask_userinfo(text, keep_user=False))
    text = _GPU_UUID.sub(GPU_UUID_MASK, text)
    for home in homes:
        home = home.rstrip("/\\")
        cut = max(home.rfind("/"), home.rfind("\\"))
        if cut > 0 and home[cut + 1 :] not in _NOT_PERSONAL:
            masked = home[: cut + 1] + USER
            text = re.sub(re.escape(home) + _END_OF_SEGMENT, masked.replace("\\", "\\\\"), text)
    return _HOME_SEGMENT.sub(
        lambda m: m.group("head") + (m.group("name") if m.group("name") in _NOT_PERSONAL else USER), text
    )


def redact_private(value: T, homes: Sequence[str] = ()) -> T:
    """A copy of `value` fit to share: secrets, URL and home-folder user names, GPU UUIDs masked.

    Opt-in (bug reports), because user names in paths are often what a local reader needs to see.
    """
    return _redact(value, lambda text: redact_private_text(text, homes))  # type: ignore[no-any-return]
