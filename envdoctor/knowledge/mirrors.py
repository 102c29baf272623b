"""Known package indexes: PyPI mirrors, Anaconda mirrors and PyTorch wheel indexes (mirrors.json)."""

from __future__ import annotations

from functools import cache
from urllib.parse import urlsplit

from envdoctor.knowledge import load_table
from envdoctor.knowledge.provenance import references
from envdoctor.model.types import TextEnum
from envdoctor.util.records import record

OFFICIAL_WHEEL_BASE = "https://download.pytorch.org/whl"


class IndexKind(TextEnum):
    PYPI = "pypi"  # a PyPI mirror
    CONDA = "conda"  # an Anaconda mirror
    PYTORCH_WHEELS = "pytorch-wheels"  # PyTorch's wheel index or a mirror of it
    VENDOR = "vendor-wheels"  # a vendor's own index: its packages and a few dependencies, not PyPI


class IndexStatus(TextEnum):
    OK = "ok"
    STALE = "stale"
    DROPPED = "dropped"
    UNVERIFIED = "unverified"


@record
class KnownIndex:
    name: str  # "tuna", "sjtu-pytorch", "official-pytorch", ...
    title: str
    kind: IndexKind
    url: str  # base URL as the operator documents it
    status: IndexStatus
    note: str  # why the status, in plain words (shown to users)
    source: tuple[str, ...] = ()  # public references (URL or owner/repo@commit:path)
    verified: bool = True  # False: no operator documentation or primary source was found
    layout: str = "pep503"  # pytorch-wheels: "pep503" (--index-url) or "flat" (a file listing for -f)
    channels_missing: tuple[str, ...] = ()  # conda: channels the mirror does not carry itself

    @property
    def flat(self) -> bool:
        return self.layout == "flat"


@cache
def known_indexes() -> tuple[KnownIndex, ...]:
    return tuple(
        KnownIndex(
            **{
                **row,
                "kind": IndexKind(row["kind"]),
                "status": IndexStatus(row["status"]),
                "channels_missing": tuple(row.get("channels_missing", ())),
                "source": references(row.get("source")),
            }
        )
        for row in load_table("mirrors.json")["indexes"]
    )


def _key(url: str) -> str:
    """Host + path, lower-cased, without scheme, credentials, port or trailing slashes."""
    text = url.strip()
    if "://" not in text:
        text = "https://" + text
    try:
        parts = urlsplit(text)
        host = (parts.hostname or "").lower()
    except ValueError:
        return ""
    path = parts.path.rstrip("/").lower()
    return f"{host}{path}"


def recognise(url: str) -> KnownIndex | None:
    """The known index `url` belongs to (the longest matching base wins), or None."""
    key = _key(url)
    if not key:
        return None
    best: KnownIndex | None = None
    best_length = -1
    for index in known_indexes():
        base = _key(index.url)
        if (key == base or key.startswith(base + "/")) and len(base) > best_length:
            best, best_length = index, len(base)
    return best


def pytorch_wheel_mirror(name: str) -> KnownIndex | None:
    """The PyTorch-wheel index run by mirror operator `name` ("sjtu", "nju", ...), if it runs one."""
    table = load_table("mirrors.json")["pytorch_wheel_mirrors"]
    wanted = table.get(name.lower())
    if not isinstance(wanted, str):
        return None
    for index in known_indexes():
        if index.name == wanted:
            return index
    return None


def pytorch_wheel_mirror_names() -> tuple[str, ...]:
    """Every operator name --mirror understands (with or without a PyTorch-wheel index)."""
    table = load_table("mirrors.json")["pytorch_wheel_mirrors"]
    return tuple(k for k in table if not k.startswith("_"))


def pytorch_wheel_url(index: KnownIndex, variant: str) -> str:
    return f"{index.url.rstrip('/')}/{variant}"


def official_wheel_url(variant: str) -> str:
    return f"{OFFICIAL_WHEEL_BASE}/{variant}"


def is_official_pytorch_index(url: str) -> bool:
    found = recognise(url)
    return found is not None and found.name == "official-pytorch"


def pypi_default_url() -> str | None:
    """PyPI's simple index URL, read from pip's installed metadata (never written out here)."""
    return _pypi_simple_url()


@cache
def _pypi_simple_url() -> str | None:
    # pip's models/index.py is loaded on its own first: importing it as pip._internal.models.index
    # runs pip._internal's set-up (logging and more), about 40 ms of `install`'s start-up for one
    # URL (issue #9). It needs only urllib.parse. Any surprise there: the ordinary import.
    url = _read_pip_index_module()
    if url is not None:
        return url
    try:
        from pip._internal.models.index import PyPI

        return str(PyPI.simple_url)
    except Exception:  # pip missing or its internals moved: the caller says "PyPI's default index"
        return None


def _read_pip_index_module() -> str | None:
    import importlib.util
    import os

    try:
        pip = importlib.util.find_spec("pip")
        if pip is None or pip.origin is None:
            return None
        path = os.path.join(os.path.dirname(pip.origin), "_internal", "models", "index.py")
        spec = importlib.util.spec_from_file_location("_envdoctor_pip_index", path)
        if spec is None or spec.loader is None:
            return None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # not put in sys.modules: pip's own import stays pip's
        url = module.PyPI.simple_url
    except Exception:  # no such file, another layout, a syntax pip's Python needs: the import path
        return None
    return url if isinstance(url, str) and url.startswith("https://") else None


def conda_channel_last_torch(channel: str) -> str | None:
    """The last torch release published to an Anaconda channel that stopped ("pytorch": 2.5.1)."""
    row = load_table("mirrors.json")["conda_channels"].get(channel)
    return str(row["last_torch"]) if isinstance(row, dict) else None
