"""A URL as it may be sent: the credentials of `scheme://user:password@host/...` taken out.

Private indexes (Artifactory, GitLab, Azure Artifacts, Nexus) are configured with their
credentials in the URL. urllib does not understand user info (it reads `user:password@host` as a
host and a port, raises, and its error names the password), and a URL sent to a server or a proxy
must never carry them: requests go out without them, and credentials travel, where they are
needed at all, as an Authorization header that is not repeated to a redirect's target.
"""

from __future__ import annotations

import base64
import urllib.parse
from collections.abc import Mapping
from typing import TYPE_CHECKING

from envdoctor.util.records import record

if TYPE_CHECKING:
    import urllib.request


@record
class SplitUrl:
    """`url` without its credentials, and the credentials (decoded) where it had any."""

    url: str
    user: str | None = None
    password: str | None = None

    @property
    def has_credentials(self) -> bool:
        return self.user is not None

    def authorization(self) -> str | None:
        """The HTTP Basic credentials pip would send for this URL, or None."""
        if self.user is None:
            return None
        pair = f"{self.user}:{self.password or ''}".encode()
        return "Basic " + base64.b64encode(pair).decode("ascii")


def split_credentials(url: str) -> SplitUrl:
    """The credentials run from "://" to the last "@" before the query or fragment, whatever they
    hold (an unencoded "/" or quote in a password included), as envdoctor's redaction reads them:
    a request never goes to a host made of a password's pieces."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return SplitUrl(url)
    end = len(rest)
    for mark in ("?", "#"):
        found = rest.find(mark)
        if found >= 0:
            end = min(end, found)
    at = rest.rfind("@", 0, end)
    if at < 0:
        return SplitUrl(url)
    userinfo, host_and_path = rest[:at], rest[at + 1 :]
    user, colon, password = userinfo.partition(":")
    return SplitUrl(
        f"{scheme}{sep}{host_and_path}",
        urllib.parse.unquote(user),
        urllib.parse.unquote(password) if colon else None,
    )


def host_problem(url: str) -> str | None:
    """Why urllib could not address `url` (already without credentials), or None: a port that is
    no number, no host at all. Said in words that quote nothing of the URL."""
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is no number
    except ValueError:
        return "not a valid URL (its port is not a number)"
    if not parts.hostname:
        return "not a valid URL (no host)"
    return None


def safe_url(url: str) -> str:
    """`url` as it may be shown or sent: without its credentials."""
    return split_credentials(url).url


def proxies_named(environ: Mapping[str, str]) -> dict[str, str]:
    """The proxies `environ` names, as urllib's getproxies_environment reads os.environ: any
    `<scheme>_proxy` in either case, the lowercase one winning, HTTP_PROXY not trusted under CGI;
    "no" holds no_proxy."""
    proxies: dict[str, str] = {}
    for name, value in environ.items():
        if value and name.lower().endswith("_proxy"):
            proxies[name.lower()[:-6]] = value
    if "REQUEST_METHOD" in environ:
        proxies.pop("http", None)
    for name, value in environ.items():
        if name.endswith("_proxy"):
            if value:
                proxies[name[:-6]] = value
            else:
                proxies.pop(name[:-6], None)
    return proxies


def opener_for(url: str, environ: Mapping[str, str]) -> urllib.request.OpenerDirector:
    """An opener for `url` with the proxies `environ` names now. urlopen's own opener is built once
    per process from os.environ as it was at the first request: a long-lived process (the pytest
    plugin, a notebook, the Python API) would keep a proxy that is gone, or miss one set later."""
    import urllib.request

    proxies = proxies_named(environ)
    host = urllib.parse.urlsplit(url).hostname or ""
    if "no" in proxies and urllib.request.proxy_bypass_environment(host, proxies):  # type: ignore[attr-defined]
        proxies = {}
    proxies.pop("no", None)
    return urllib.request.build_opener(urllib.request.ProxyHandler(proxies))
