"""What a configured URL is: a PyPI mirror, PyTorch's wheel index (or a mirror of it), which
variant, which conda channel; and the URL with its credentials taken out. Which index a URL is
comes from the knowledge base (knowledge/mirrors.json)."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from envdoctor.knowledge import mirrors
from envdoctor.knowledge.mirrors import IndexKind, KnownIndex
from envdoctor.util.lazy_re import Lazy
from envdoctor.util.redact import has_secret, redact_text


def _key(url: str) -> str:
    """Host and path, lower-cased, without scheme, credentials or trailing slashes."""
    try:
        parts = urlsplit(url.strip() if "://" in url else "https://" + url.strip())
        return f"{(parts.hostname or '').lower()}{parts.path.rstrip('/').lower()}"
    except ValueError:
        return ""


def pypi_mirror(url: str) -> KnownIndex | None:
    found = mirrors.recognise(url)
    return found if found is not None and found.kind == IndexKind.PYPI else None


def torch_index(url: str) -> KnownIndex | None:
    """PyTorch's wheel index or a known mirror of it."""
    found = mirrors.recognise(url)
    return found if found is not None and found.kind == IndexKind.PYTORCH_WHEELS else None


def variant_of(url: str, index: KnownIndex) -> str | None:
    """ "cu126" from https://download.pytorch.org/whl/cu126 (or .../whl/nightly/cu126)."""
    rest = _key(url)[len(_key(index.url)) :].strip("/")
    for segment in rest.split("/"):
        if segment == "cpu" or segment.startswith(("cu", "rocm", "xpu")):
            return segment
    return None


def without_credentials(url: str) -> str:
    """The URL without user:password@, a conda /t/<token>/ segment or secret query parameters."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact_text(url)
    netloc = parts.netloc.rsplit("@", 1)[-1]
    path = parts.path
    if path.startswith("/t/"):
        path = "/" + path[3:].split("/", 1)[-1] if "/" in path[3:] else "/"
    query = "&".join(p for p in parts.query.split("&") if p and not has_secret("?" + p))
    return urlunsplit((parts.scheme, netloc, path, query, parts.fragment))


def channel_name(channel: str) -> str:
    """ "pytorch" from "pytorch", "pytorch/label/x" or a channel URL ending in /pytorch/."""
    text = channel.strip().rstrip("/")
    if "://" in text:
        return text.rsplit("/", 1)[-1]
    return text.split("/", 1)[0]


_VARIANT_SEGMENT = Lazy(r"cpu|cu\d{2,3}|rocm\d[\d.]*|xpu")


def wheel_variant(url: str) -> str | None:
    """The variant of a PyTorch-style per-variant index on any host: "cpu" from a wheel cache's
    http://cache:8080/whl/cpu/ as from download.pytorch.org/whl/cpu (the path after a /whl/
    segment, nightly/ and test/ skipped); None for other URLs."""
    path = _key(url).split("/", 1)[-1] if "/" in _key(url) else ""
    segments = [s for s in path.split("/") if s]
    if "whl" not in segments:
        return None
    rest = segments[segments.index("whl") + 1 :]
    while rest and rest[0] in ("nightly", "test"):
        rest = rest[1:]
    return rest[0] if rest and _VARIANT_SEGMENT.fullmatch(rest[0]) else None


def is_variantless_torch_index(url: str) -> bool:
    """A PyTorch wheel index (or a mirror of one) named without a variant: the root /whl listing or
    a torch_stable.html page that lists every variant, where pip picks among them by version."""
    index = torch_index(url)
    if index is None:
        return False
    rest = _key(url)[len(_key(index.url)) :].strip("/")
    segments = [s for s in rest.split("/") if s]
    while segments and segments[0] in ("nightly", "test"):
        segments = segments[1:]
    if not segments:
        return True
    if segments[-1] == "torch_stable.html" or segments[-1] == "torch_nightly.html":
        return len(segments) == 1
    return segments[0] in ("torch", "torchvision", "torchaudio")


def vendor_index(url: str) -> KnownIndex | None:
    """A vendor's own index (AWS Neuron, AMD's nightlies): its packages, not PyPI's."""
    found = mirrors.recognise(url)
    return found if found is not None and found.kind == IndexKind.VENDOR else None
