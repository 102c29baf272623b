"""Bounded, parallel GETs: each request has a short timeout, the whole batch a deadline.

The workers are daemon threads rather than a ThreadPoolExecutor's: a worker stuck in a name lookup
(which no socket timeout covers) must not keep the process alive after the deadline, and an
executor's threads are joined at exit. Every answer is read in chunks against the request's own
deadline and a size limit, so a server that drips bytes cannot stretch a request either.
"""

from __future__ import annotations

import os
import queue
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable

from envdoctor.util import threads
from envdoctor.util.records import record
from envdoctor.util.urls import host_problem, opener_for, split_credentials
from envdoctor.version import __version__

REQUEST_TIMEOUT = 5.0
WORKERS = 8
PAGE_LIMIT = 64 * 2**20  # PyTorch's per-variant torch page is a few MB
_CHUNK = 256 * 1024
SIMPLE_ACCEPT = (
    "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01"
)


@record
class Request:
    url: str
    accept: str = "*/*"
    limit: int = PAGE_LIMIT


@record
class Response:
    """What one GET got: a status and the body, or why nothing usable came back."""

    url: str
    status: int | None = None  # the HTTP status; None when the server never answered
    body: bytes = b""
    content_type: str = ""
    error: str | None = None  # "timed out", "connection refused", "HTTP 404", ...
    base: str = ""  # the URL the body came from after redirects: relative links resolve against it

    @property
    def ok(self) -> bool:
        return self.error is None and self.status == 200


def _why(exc: BaseException) -> str:
    reason = getattr(exc, "reason", exc)
    if isinstance(reason, (socket.timeout, TimeoutError)):
        return "timed out"
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    if isinstance(reason, socket.gaierror):
        return f"host not found ({reason.strerror or reason})"
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror
    return str(reason) or type(reason).__name__


def _read_file_url(request: Request) -> Response:
    """A file:// index (pip reads a folder's index.html the same way)."""
    path = urllib.request.url2pathname(urllib.parse.urlsplit(request.url).path)
    if os.path.isdir(path):
        path = os.path.join(path, "index.html")
    try:
        with open(path, "rb") as handle:
            body = handle.read(request.limit + 1)
    except FileNotFoundError:
        return Response(request.url, status=404, error="HTTP 404")
    except OSError as exc:
        return Response(request.url, error=exc.strerror or str(exc))
    if len(body) > request.limit:
        return Response(request.url, error=f"larger than {request.limit // 2**20} MiB")
    kind = "application/vnd.pypi.simple.v1+json" if path.endswith(".json") else "text/html"
    return Response(request.url, status=200, body=body, content_type=kind)


def fetch(request: Request, timeout: float = REQUEST_TIMEOUT) -> Response:
    """One GET within about `timeout` seconds; never raises."""
    if request.url.startswith("file:"):
        return _read_file_url(request)
    ends = time.monotonic() + timeout
    headers = {"Accept": request.accept, "User-Agent": f"envdoctor/{__version__} (update)"}
    # urllib cannot take credentials in a URL (and would name them in its error): they go as the
    # Authorization header pip sends, which urllib does not repeat to a redirect's target.
    split = split_credentials(request.url)
    problem = host_problem(split.url)
    if problem is not None:
        return Response(request.url, error=problem)
    outgoing = urllib.request.Request(split.url, headers=headers)
    authorization = split.authorization()
    if authorization is not None:
        outgoing.add_unredirected_header("Authorization", authorization)
    try:
        with opener_for(split.url, os.environ).open(outgoing, timeout=timeout) as answer:
            chunks: list[bytes] = []
            size = 0
            while True:
                if time.monotonic() > ends:
                    return Response(request.url, status=answer.status, error="timed out")
                chunk = answer.read(_CHUNK)
                if not chunk:
                    break
                size += len(chunk)
                if size > request.limit:
                    return Response(request.url, error=f"larger than {request.limit // 2**20} MiB")
                chunks.append(chunk)
            kind = answer.headers.get("Content-Type", "")
            # Relative links resolve against where the body came from: the URL asked, unless a
            # redirect moved it (the credentials stay with the URL as configured, never sent).
            moved = answer.geturl()
            base = request.url if not moved or moved == split.url else moved
            return Response(request.url, answer.status, b"".join(chunks), kind, base=base)
    except urllib.error.HTTPError as exc:
        return Response(request.url, status=exc.code, error=f"HTTP {exc.code}")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return Response(request.url, error=_why(exc))
    except Exception as exc:  # http.client's odd ends (a bad status line, ...): one answer, no crash
        return Response(request.url, error=f"{type(exc).__name__}: {exc}")


def fetch_all(
    requests: Iterable[Request],
    deadline: float,
    timeout: float = REQUEST_TIMEOUT,
    workers: int = WORKERS,
) -> dict[str, Response]:
    """Fetch every request in parallel until `deadline` (time.monotonic()); a request still
    unanswered then gets a "no answer" Response. Answers are keyed by URL."""
    pending: queue.Queue[Request] = queue.Queue()
    wanted = {r.url: r for r in requests}
    for request in wanted.values():
        pending.put(request)
    answers: dict[str, Response] = {}
    done = threading.Condition()

    def work() -> None:
        while True:
            try:
                request = pending.get_nowait()
            except queue.Empty:
                return
            left = deadline - time.monotonic()
            if left <= 0:
                answer = Response(request.url, error="not asked: the time limit was reached")
            else:
                try:
                    answer = fetch(request, min(timeout, left))
                except Exception as exc:  # a bug in one request: the others still answer
                    answer = Response(request.url, error=f"envdoctor could not ask: {threads.describe(exc)}")
            with done:
                answers[request.url] = answer
                done.notify_all()

    for number in range(min(workers, len(wanted))):
        threads.start(work, f"envdoctor-update-{number}")
    with done:
        while len(answers) < len(wanted):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            done.wait(left)
        found = dict(answers)
    for url in wanted:
        found.setdefault(url, Response(url, error="no answer within the time limit"))
    return found
