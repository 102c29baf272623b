"""The sources probe: what local find-links folders and file:// indexes hold, the constraint lines on
torch, [tool.uv.sources], and whether remote indexes answer (a real server on 127.0.0.1, a closed
port, and one that never answers, each within the bound)."""

from __future__ import annotations

import http.server
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from envdoctor.host.live import LiveHost
from envdoctor.model.sources import ListingKind, ListingStatus, PipConfig, PipSetting, ReachStatus
from envdoctor.probes import sources
from envdoctor.probes.mirrors import collect_uv
from envdoctor.probes.sources import check_reach, list_sources
from tests.host_builder import Machine
from tests.machine_sources import CONSTRAINTS, LOCAL_TORCH, this_machine
from tests.support import context

pytestmark = pytest.mark.slow


def _pip(**settings: str) -> PipConfig:
    found = tuple(PipSetting("global", k.replace("_", "-"), v, "/etc/pip.conf") for k, v in settings.items())
    return PipConfig(settings=found, effective=found)


def test_listings_of_a_find_links_folder_and_file_indexes() -> None:
    facts = sources.collect(context(this_machine().host))
    by_url = {lst.url: lst for lst in facts.listings}
    assert by_url["/opt/wheels"].files == (LOCAL_TORCH,)
    assert by_url["/opt/wheels"].kind is ListingKind.FIND_LINKS
    more = by_url["file:///opt/pypi-more/simple"]
    assert more.kind is ListingKind.INDEX and more.path == "/opt/pypi-more/simple"
    assert more.files[0] == "torch-2.14.1-cp311-cp311-manylinux_2_28_x86_64.whl"
    assert len(more.files) == 4  # torch 2.14.1 and three torchvision, not absl-py's page
    assert by_url["file:///opt/pypi/simple"].files == ()
    assert [c.project + c.specifier for c in facts.constraints[0].lines] == [
        "torch<=2.14.1",
        "torchvision<=0.29.1",
    ]
    assert facts.constraints[0].path == CONSTRAINTS
    line = sources.describe(facts)
    assert f"local torch wheels: {LOCAL_TORCH}, torch-2.14.1" in line
    assert "constraints torch<=2.14.1, torchvision<=0.29.1 (/etc/xdg/pip/constraints.txt)" in line
    assert "no answer: download.pytorch.org/whl (Name or service not known)" in line


def test_missing_folders_html_find_links_and_relative_paths() -> None:
    machine = Machine()
    machine.file(
        "/home/user/project/links.html",
        '<a href="sub/torch-2.5.1%2Bcu124-cp311-cp311-linux_x86_64.whl">x</a>',
    )
    pip = _pip(
        find_links="links.html /gone", extra_index_url="file:///nowhere/simple https://example.invalid/s"
    )
    found = {lst.url: lst for lst in list_sources(machine.host, "linux", pip, None)}
    assert found["links.html"].files == ("torch-2.5.1+cu124-cp311-cp311-linux_x86_64.whl",)
    assert found["links.html"].path == "/home/user/project/links.html"
    assert found["/gone"].status is ListingStatus.MISSING
    assert found["file:///nowhere/simple"].status is ListingStatus.MISSING
    assert "https://example.invalid/s" not in found  # remote: asked for reachability, never listed


def test_constraint_lines_and_a_constraint_from_the_environment() -> None:
    machine = Machine(env={"PIP_CONSTRAINT": "/c.txt"})
    machine.file(
        "/c.txt",
        "-r other.txt\n# torch==1.0\nTorch >= 2.0, <2.6  # cap\nnumpy<2\n"
        "torchaudio[x]==2.5.1 ; python_version>'3'\n",
    )
    pip = PipConfig(
        settings=(PipSetting(":env:", "constraint", "/c.txt", "PIP_CONSTRAINT"),),
        effective=(PipSetting(":env:", "constraint", "/c.txt", "PIP_CONSTRAINT"),),
    )
    (found,) = sources.read_constraints(machine.host, "linux", pip)
    assert [(c.project, c.specifier, c.line) for c in found.lines] == [
        ("Torch", ">=2.0,<2.6", 3),
        ("torchaudio", "==2.5.1", 5),
    ]
    assert found.origin == "PIP_CONSTRAINT"


def test_uv_sources_routes_are_read_from_the_project() -> None:
    machine = Machine()
    machine.file(
        "/home/user/project/pyproject.toml",
        '[tool.uv]\n[[tool.uv.index]]\nname = "pytorch-cu130"\nurl = "https://download.pytorch.org/whl/cu130"\n'
        "explicit = true\n[tool.uv.sources]\n"
        'torch = [{ index = "pytorch-cu130", marker = "sys_platform == \'linux\'" }]\n'
        'numpy = { git = "https://example.invalid/numpy" }\n',
    )
    routes = sources.uv_routes(machine.host, collect_uv(machine.host, "linux"))
    assert [(r.package, r.index) for r in routes] == [("torch", "pytorch-cu130")]


class _Index(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path.startswith("/simple") else 404)
        self.end_headers()
        self.wfile.write(b"<a href='torch-2.13.0-cp311-cp311-manylinux_2_28_x86_64.whl'>t</a>")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def index() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Index)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def silent() -> Iterator[str]:
    """A port that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/simple/"
    listener.close()


def _closed_port() -> str:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return f"http://127.0.0.1:{port}/simple/"


@pytest.mark.exclusive  # a time bound: the loopback index must answer within it
def test_reachability_with_a_real_index_a_closed_port_and_a_silent_one(index: str, silent: str) -> None:
    host = LiveHost(environ={})  # no proxy variables: 127.0.0.1 straight
    started = time.perf_counter()
    found = check_reach(host, [f"{index}/simple/", f"{index}/missing/", _closed_port(), silent], seconds=5.0)
    took = time.perf_counter() - started
    assert [r.status for r in found] == [
        ReachStatus.REACHABLE,
        ReachStatus.REACHABLE,  # a 404 is an answer: the server is there
        ReachStatus.UNREACHABLE,
        ReachStatus.UNREACHABLE,
    ]
    assert found[0].detail == "HTTP 200" and found[1].detail == "HTTP 404"
    assert "refused" in found[2].detail.lower()
    assert took < 5.0 + 1.0, f"all at once, within the bound: {took:.2f} s"


def test_reach_targets_put_pytorch_first_and_skip_local_and_no_index() -> None:
    pip = _pip(index_url="https://mirror.example/simple", extra_index_url="file:///opt/x https://b.example/s")
    assert sources.reach_targets(pip, None, "https://default.example/simple") == (
        "https://download.pytorch.org/whl/",
        "https://mirror.example/simple",
        "https://b.example/s",
    )
    quiet = _pip(no_index="1")
    assert sources.reach_targets(quiet, None, "https://default.example/simple") == (
        "https://download.pytorch.org/whl/",
    )


def test_offline_from_the_environment_variable() -> None:
    machine = this_machine()
    machine.host.environ["ENVDOCTOR_OFFLINE"] = "1"
    facts = sources.PROBE.collect(context(machine.host))
    assert facts.offline and {r.status for r in facts.reach} == {ReachStatus.NOT_CHECKED}
