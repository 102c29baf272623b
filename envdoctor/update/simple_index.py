"""A project page of a simple repository API: PEP 503 HTML or PEP 691 JSON, with PEP 658 metadata.

Only what `envdoctor update` needs is kept: each file's name and absolute URL, whether it is
yanked, and where its core metadata is (the wheel's URL plus ".metadata") with its sha256.
"""

from __future__ import annotations

import json
import urllib.parse
from html.parser import HTMLParser
from typing import Any

from envdoctor.update.http import Response
from envdoctor.util.records import record

_JSON_TYPE = "application/vnd.pypi.simple.v1+json"


@record
class IndexFile:
    filename: str
    url: str  # absolute, without the #hash fragment
    metadata_url: str | None = None  # PEP 658: the file's URL + ".metadata", when the index has it
    metadata_sha256: str | None = None
    yanked: bool = False


class IndexPageError(ValueError):
    """The page is neither a PEP 503 nor a PEP 691 project page."""


def _metadata(url: str, value: object) -> tuple[str | None, str | None]:
    """PEP 658/714: `true`, a "sha256=..." string (HTML) or a {"sha256": ...} mapping (JSON)."""
    if value is None or value is False or value == "false":
        return None, None
    digest = None
    if isinstance(value, dict):
        found = value.get("sha256")
        digest = found if isinstance(found, str) else None
    elif isinstance(value, str):
        name, _, text = value.partition("=")
        digest = text if name == "sha256" and text else None
    return f"{url}.metadata", digest


def _file(page_url: str, href: str, name: str | None, metadata: object, yanked: bool) -> IndexFile:
    absolute = urllib.parse.urljoin(page_url, href)
    url, _, _ = absolute.partition("#")
    filename = name or urllib.parse.unquote(urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1])
    metadata_url, digest = _metadata(url, metadata)
    return IndexFile(filename, url, metadata_url, digest, yanked)


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.anchors: list[tuple[dict[str, str | None], list[str]]] = []
        self._text: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._text = []
            self.anchors.append((dict(attrs), self._text))

    def handle_data(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a":
            self._text = None


def _html(page_url: str, text: str) -> tuple[IndexFile, ...]:
    parser = _Anchors()
    parser.feed(text)
    found = []
    for attrs, words in parser.anchors:
        href = attrs.get("href")
        if not href:
            continue
        metadata = attrs.get("data-core-metadata", attrs.get("data-dist-info-metadata"))
        if metadata is None and ("data-core-metadata" in attrs or "data-dist-info-metadata" in attrs):
            metadata = "true"  # a bare attribute: present, without a hash
        name = "".join(words).strip() or None
        found.append(_file(page_url, href, name, metadata, "data-yanked" in attrs))
    return tuple(found)


def _json(page_url: str, data: Any) -> tuple[IndexFile, ...]:
    if not isinstance(data, dict) or not isinstance(data.get("files"), list):
        raise IndexPageError("a JSON page without a files list")
    found = []
    for entry in data["files"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
            continue
        metadata = entry.get("core-metadata", entry.get("dist-info-metadata"))
        yanked = entry.get("yanked", False)
        name = entry.get("filename")
        found.append(
            _file(page_url, entry["url"], name if isinstance(name, str) else None, metadata, bool(yanked))
        )
    return tuple(found)


def parse_page(response: Response) -> tuple[IndexFile, ...]:
    """The files a project page lists, in its order; IndexPageError when it is no such page."""
    text = response.body.decode("utf-8", errors="replace")
    if _JSON_TYPE in response.content_type or (
        "json" in response.content_type and text.lstrip().startswith("{")
    ):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise IndexPageError(f"bad JSON ({exc})") from None
        return _json(response.base or response.url, data)
    return _html(response.base or response.url, text)
