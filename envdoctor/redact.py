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

T = TypeVar("T")
MASK = "****"

# scheme://user:password@host -> scheme://user:****@host ; scheme://token@host -> scheme://****@host
# Greedy up to the last "@" before the path, as pip splits: a password may contain "@".
_URL_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/\s'\"<>]+)@")
# conda's token form: https://conda.anaconda.org/t/<token>/channel, also at the end of a
# channel_alias (https://conda.anaconda.org/t/<token>), where no slash follows.
_CONDA_TOKEN = re.compile(r"(/t/)([^/\s'\"]+)(?=/|[\s'\"]|$)")
_CONDA_URL_TOKEN = re.compile(r"https?://[^\s'\"]*?/t/[^/\s'\"]+", re.IGNORECASE)
_SECRET_QUERY = re.compile(
    r"([?&](?:[A-Za-z0-9_.-]*(?:token|secret|password|passwd|key|auth|signature|sig|credential)"
    r"[A-Za-z0-9_.-]*)=)([^&#\s'\"]+)",
    re.IGNORECASE,
)
_SECRET_NAME = re.compile(
    r"TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIAL|"
    r"(^|_)AUTH($|_)|_PAT$|^PAT_|COOKIE|SESSION",
    re.IGNORECASE,
)


def _userinfo(match: re.Match[str]) -> str:
    userinfo = match.group("userinfo")
    if ":" in userinfo:
        user = userinfo.split(":", 1)[0]
        return f"{match.group('scheme')}{user}:{MASK}@"
    return f"{match.group('scheme')}{MASK}@"


def redact_text(text: str) -> str:
    text = _URL_USERINFO.sub(_userinfo, text)
    text = _CONDA_TOKEN.sub(lambda m: f"{m.group(1)}{MASK}", text)
    return _SECRET_QUERY.sub(lambda m: f"{m.group(1)}{MASK}", text)


def has_secret(text: str) -> bool:
    """Whether `text` carries a credential redact_text would mask, masked already or not.

    A conda /t/ segment counts only in an http(s) URL: elsewhere it is an ordinary folder.
    """
    return bool(_URL_USERINFO.search(text) or _SECRET_QUERY.search(text) or _CONDA_URL_TOKEN.search(text))


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def redact(value: T) -> T:
    """A copy of `value` (dataclasses, tuples, lists, mappings, strings) with secrets masked."""
    return _redact(value, redact_text)  # type: ignore[no-any-return]


def _redact(value: Any, text: Callable[[str], str]) -> Any:
    if isinstance(value, enum.Enum):  # str-valued enums are values, not text to mask
        return value
    if isinstance(value, str):
        return text(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: _redact(getattr(value, f.name), text) for f in dataclasses.fields(value) if f.init}
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


# --- opt-in, for output meant to be shared (`envdoctor report`) -----------------------------------

USER = "<user>"
GPU_UUID_MASK = "GPU-<uuid>"
# GPU-5f9e1c2a-... and MIG-5f9e1c2a-... as NVML and nvidia-smi -L print them.
_GPU_UUID = re.compile(
    r"\b(?:GPU|MIG)-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)
# The user-name segment of home folders: /home/NAME, /Users/NAME, C:\Users\NAME, /mnt/c/Users/NAME.
_HOME_SEGMENT = re.compile(
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
    text = redact_text(text)
    # The user part of URL credentials names a person too: user:****@ becomes ****@.
    text = _URL_USERINFO.sub(lambda m: f"{m.group('scheme')}{MASK}@", text)
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
