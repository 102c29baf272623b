"""Credentials planted in every place an index can be set never reach stdout or stderr, and never
leave the machine in a reachability request (issue 20, item 1).

Each command runs as a real process, online: the suite's ENVDOCTOR_OFFLINE is lifted and every
request urllib makes goes to a recording proxy on 127.0.0.1 (HTTP(S)_PROXY), so the reachability
checks really run (they once crashed on `user:token@host` with a traceback naming the token) while
nothing leaves this machine. The proxy answers 403: the host answered, as a private index does
without credentials.
"""

from __future__ import annotations

import os
import socket
import socketserver
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.index_server import build_index, serve

pytestmark = pytest.mark.slow

ENVDOCTOR = [sys.executable, "-m", "envdoctor"]

TOKENS = {
    "PIP_INDEX_URL": "tokPipIndexQ1",
    "PIP_EXTRA_INDEX_URL": "tokPipExtraQ2",
    "PIP_FIND_LINKS": "tokPipLinksQ3",
    "pip.conf extra-index-url": "tokPipConfExtraQ4",
    "pip.conf find-links": "tokPipConfLinksQ5",
    "UV_EXTRA_INDEX_URL": "tokUvExtraQ6",
    "UV_INDEX": "tokUvIndexQ7",
    "UV_FIND_LINKS": "tokUvLinksQ8",
    "uv.toml [[index]]": "tokUvTomlQ9",
    "pyproject [tool.uv]": "tokPyprojectQ10",
    ".condarc channels": "tokCondarcQ11",
    "UV_DEFAULT_INDEX": "tokUvDefaultQ12",
    "HF_TOKEN": "hf_tokHuggingFaceQ13aaaaaaaaaaaaaa",
    "MY_SERVICE_API_KEY": "tokApiKeyQ14",
}


def _url(place: str, host: str) -> str:
    return f"https://ci-user:{TOKENS[place]}@{host}.example.invalid/simple"


class _Recorder(socketserver.BaseRequestHandler):
    """Reads one request head, records it, answers 403 and closes."""

    def handle(self) -> None:
        self.request.settimeout(5)
        head = b""
        try:
            while b"\r\n\r\n" not in head and len(head) < 65536:
                chunk = self.request.recv(4096)
                if not chunk:
                    break
                head += chunk
            self.server.heads.append(head.decode("latin-1"))  # type: ignore[attr-defined]
            self.request.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        except OSError:
            pass


@dataclass
class Proxy:
    url: str
    heads: list[str]


@pytest.fixture
def proxy() -> Iterator[Proxy]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Recorder)
    server.daemon_threads = True
    server.heads = []  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield Proxy(f"http://127.0.0.1:{server.server_address[1]}", server.heads)  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()


def _planted_home(root: Path) -> tuple[Path, Path]:
    home = root / "home"
    project = home / "project"
    files = {
        home / ".config/pip/pip.conf": "[global]\n"
        f"extra-index-url = {_url('pip.conf extra-index-url', 'conf-extra')}\n"
        f"find-links = {_url('pip.conf find-links', 'conf-links')}\n",
        home / ".condarc": "channels:\n"
        f"  - https://ci-user:{TOKENS['.condarc channels']}@conda.example.invalid/main\n  - defaults\n",
        project / "uv.toml": f'[[index]]\nname = "corp"\nurl = "{_url("uv.toml [[index]]", "uv-toml")}"\n',
        project / "pyproject.toml": '[project]\nname = "demo"\nversion = "0"\n[tool.uv]\n'
        f'extra-index-url = ["{_url("pyproject [tool.uv]", "pyproject")}"]\n',
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return home, project


def _environment(home: Path, proxy: Proxy) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_", "CONDA", "XDG_"))}
    keep.pop("ENVDOCTOR_OFFLINE", None)  # online: the reachability checks run, through the proxy
    for name in ("no_proxy", "NO_PROXY"):
        keep.pop(name, None)
    keep.update(
        HOME=str(home),
        HTTP_PROXY=proxy.url,
        HTTPS_PROXY=proxy.url,
        http_proxy=proxy.url,
        https_proxy=proxy.url,
        PIP_INDEX_URL=_url("PIP_INDEX_URL", "index"),
        PIP_EXTRA_INDEX_URL=_url("PIP_EXTRA_INDEX_URL", "extra"),
        PIP_FIND_LINKS=_url("PIP_FIND_LINKS", "links"),
        UV_EXTRA_INDEX_URL=_url("UV_EXTRA_INDEX_URL", "uv-extra"),
        UV_INDEX=f"corp2={_url('UV_INDEX', 'uv-index')}",
        UV_FIND_LINKS=_url("UV_FIND_LINKS", "uv-links"),
        UV_DEFAULT_INDEX=_url("UV_DEFAULT_INDEX", "uv-default"),
        HF_TOKEN=TOKENS["HF_TOKEN"],
        MY_SERVICE_API_KEY=TOKENS["MY_SERVICE_API_KEY"],
    )
    return keep


def _leaks(text: str) -> list[str]:
    return [place for place, token in TOKENS.items() if token in text]


@dataclass(frozen=True)
class Ran:
    argv: tuple[str, ...]
    code: int
    out: str
    err: str


def _run(argv: tuple[str, ...], env: dict[str, str], cwd: Path) -> Ran:
    done = subprocess.run(
        [*ENVDOCTOR, *argv], env=env, cwd=cwd, capture_output=True, text=True, timeout=180, check=False
    )
    return Ran(argv, done.returncode, done.stdout, done.stderr)


def _assert_clean(ran: Ran) -> None:
    where = " ".join(ran.argv)
    assert ran.code in (0, 1), f"{where}: exit {ran.code}\n{ran.err}"
    assert not _leaks(ran.out), f"{where}: stdout shows the tokens planted in {_leaks(ran.out)}"
    assert not _leaks(ran.err), f"{where}: stderr shows the tokens planted in {_leaks(ran.err)}:\n{ran.err}"
    assert "Traceback" not in ran.err and "Exception in thread" not in ran.err, f"{where}:\n{ran.err}"


def test_every_command_online_keeps_planted_credentials_to_itself(tmp_path: Path, proxy: Proxy) -> None:
    home, project = _planted_home(tmp_path)
    env = _environment(home, proxy)
    snapshot = tmp_path / "snap.json"
    commands: list[tuple[str, ...]] = [
        ("check", "--no-smoke"),
        ("check", "--no-smoke", "--format", "json"),
        ("check", "--no-smoke", "--format", "github"),
        ("install",),
        ("install", "--format", "json"),
        ("install", "--gpu", "RTX 4090", "--driver", "550.54.15"),
        ("install", "--manager", "uv"),
        ("snapshot", "--no-smoke", "-o", str(snapshot)),
        ("report",),
        ("fix", "--dry-run"),
    ]
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = list(pool.map(lambda argv: _run(argv, env, project), commands))
    for ran in runs:
        _assert_clean(ran)
    snapshot_text = snapshot.read_text(encoding="utf-8")
    assert not _leaks(snapshot_text), f"the snapshot shows {_leaks(snapshot_text)}"
    # The online path was taken: the reachability checks went out, through the proxy ...
    asked = "\n".join(proxy.heads)
    assert "index.example.invalid" in asked, "the index pip uses was never asked: the test ran offline"
    # ... and no request carried a credential (they are asked without one).
    assert not _leaks(asked), f"a request sent the tokens planted in {_leaks(asked)}"
    # The planted settings were read and shown masked, not skipped.
    human = next(r for r in runs if r.argv == ("check", "--no-smoke"))
    assert "ci-user:****@index.example.invalid" in human.out, human.out


def test_update_sends_credentials_as_a_header_never_in_output(tmp_path: Path) -> None:
    """A private index is read with its credentials, as pip sends them (HTTP Basic), and none of
    it reaches the output or the overlay."""
    root = tmp_path / "index"
    build_index(root)
    token = "tokUpdatePrivateQ15"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    env.update(ENVDOCTOR_CACHE_DIR=str(tmp_path / "cache"))
    with serve(root) as served:
        private = served.url.replace("http://", f"http://reader:{token}@")
        ran = _run(
            ("update", "--index-url", f"{private}/simple", "--pytorch-index", f"{private}/whl"), env, tmp_path
        )
        headers = list(served.headers)
    _assert_clean(ran)
    assert ran.code == 0, ran.err
    import base64

    expected = "Basic " + base64.b64encode(f"reader:{token}".encode()).decode()
    assert expected in headers, "the index was not asked with the URL's credentials"
    overlay = "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "cache").rglob("*.json"))
    assert token not in overlay


def test_a_request_never_goes_to_a_host_made_of_a_password() -> None:
    from envdoctor.util.urls import split_credentials

    odd = split_credentials('https://alice:p"w0rd/<tok>@pkgs.example.invalid/simple?x=1')
    assert odd.url == "https://pkgs.example.invalid/simple?x=1"
    assert (odd.user, odd.password) == ("alice", 'p"w0rd/<tok>')
    plain = split_credentials("https://u:p%40ss@h.example.invalid/simple")
    assert plain.url == "https://h.example.invalid/simple" and plain.password == "p@ss"
    # An unencoded "/" in a password: what precedes the last "@" is never taken for a host.
    numeric = split_credentials("https://user:123/s3cret@pkgs.example.invalid/simple")
    assert numeric.url == "https://pkgs.example.invalid/simple" and "s3cret" not in numeric.url
    # An "@" after the query starts belongs to the query.
    assert (
        split_credentials("https://h.example.invalid/simple?c@d").url
        == "https://h.example.invalid/simple?c@d"
    )
    assert not split_credentials("file:///opt/wheels").has_credentials


def test_reachability_without_a_route_is_an_answer_not_a_crash() -> None:
    """The live host's request for a URL with credentials, a port that is no number, or nothing
    listening: each an UrlStatus, none raises (the thread that asked once died with a traceback)."""
    from envdoctor.host.live import LiveHost

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    host = LiveHost({})
    for url in (
        f"http://u:tok@127.0.0.1:{port}/simple",
        "http://u:tok@127.0.0.1:notaport/simple",
        "http://127.0.0.1:99999/simple",
    ):
        answer = host.url_status(url, 2.0)
        assert answer.status is None and answer.error, (url, answer)
        assert "tok" not in answer.error, answer.error
