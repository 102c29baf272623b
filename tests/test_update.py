"""`envdoctor update` against a package index served from a temporary folder on 127.0.0.1, then
`install` reading the overlay it wrote; index pages, wheel names and metadata parsed for real."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from envdoctor.knowledge import overlay
from envdoctor.update.http import SIMPLE_ACCEPT, Request, fetch, fetch_all
from envdoctor.update.simple_index import parse_page
from envdoctor.update.wheels import cuda_requirement, parse_wheel, platform_of, torch_pin
from tests.index_server import Served, build_index, metadata, serve

ENVDOCTOR = [sys.executable, "-m", "envdoctor"]


@pytest.fixture(scope="module")
def index_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("index")
    build_index(root)
    return root


@pytest.fixture(scope="module")
def index(index_root: Path) -> Iterator[Served]:
    with serve(index_root) as served:
        yield served


@pytest.fixture
def own_index(index_root: Path) -> Iterator[Served]:
    """The index served for one test alone: the in-process fetches depend on no other test's
    server staying up (a module's server outlived by its cached value was refused once in CI)."""
    with serve(index_root) as served:
        yield served


def _env(cache: Path) -> dict[str, str]:
    return dict(os.environ, ENVDOCTOR_CACHE_DIR=str(cache))


def _run(cache: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ENVDOCTOR, *args], env=_env(cache), capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture(scope="module")
def updated(index: Served, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, list[str]]:
    """One update against the loopback index: (cache folder, its output, the paths it requested)."""
    cache = tmp_path_factory.mktemp("cache")
    before = len(index.requests)
    done = _run(cache, "update", "--index-url", f"{index.url}/simple", "--pytorch-index", f"{index.url}/whl")
    assert done.returncode == 0, done.stderr
    return cache, done.stdout, list(index.requests[before:])


def _overlay(cache: Path) -> dict[str, object]:
    data = json.loads((cache / overlay.FILE_NAME).read_text())
    assert isinstance(data, dict)
    return data


@pytest.mark.slow
def test_update_writes_the_new_releases_with_what_each_index_said(
    updated: tuple[Path, str, list[str]],
) -> None:
    cache, out, _ = updated
    data = _overlay(cache)
    assert data["schema"] == "envdoctor.overlay/1"
    rows = {r["torch"]: r for r in data["releases"]}  # type: ignore[attr-defined]
    # the pre-release and the yanked 2.16.1 are left out; 2.13.0 is already in the built-in data
    assert sorted(rows) == ["2.15.0", "2.16.0"]
    new = rows["2.16.0"]
    assert new["torchvision"] == "0.31.0"  # its metadata requires torch==2.16.0
    assert new["python"] == ["3.11", "3.12", "3.13"]
    assert new["cuda"] == ["12.8", "13.0", "13.3"]  # 13.3 from cuda-toolkit==13.3.1 in the metadata
    linux = new["platforms"]["linux-x86_64"]
    assert linux["variants"] == ["cpu", "cu128", "cu130", "cu133"]  # the unlabelled cp314 wheel is no cu128
    assert linux["pypi"] == "cu128"  # the default index's wheel requires nvidia-cuda-runtime-cu12==12.8.*
    assert new["platforms"]["windows-x86_64"]["pypi"] == "cpu"  # no nvidia-* requirement
    assert new["platforms"]["macos-arm64"]["pypi"] == "none"  # not on the default index
    # 2.15.0's default wheels have no metadata: that platform's plain-pip variant is assumed
    assert rows["2.15.0"]["assumed_fields"] == ["platforms.linux-x86_64.pypi"]
    arch = [a for a in data["arch_lists"] if a["torch"] == "2.16.0" and a["variant"] == "cu133"]  # type: ignore[attr-defined]
    assert arch == [
        {
            "torch": "2.16.0",
            "variant": "cu133",
            "machine": "x86_64",
            "arch_list": arch[0]["arch_list"],
            "from": "torch 2.13 cu132",
            "source": arch[0]["source"],
            "assumed": True,
        }
    ]
    assert arch[0]["source"] and all(isinstance(r, str) for r in arch[0]["source"])
    assert data["drivers"] == [
        {"cuda": "13.3", "linux": "595.45.04", "windows": "595", "from": "CUDA 13.2", "assumed": True}
    ]
    assert "torch 2.16.0 (torchvision 0.31.0)" in out
    assert "new variants: cu128 cu133" in out
    assert "CUDA 13.3: minimum driver carried forward from CUDA 13.2" in out
    assert f"Written: {cache / overlay.FILE_NAME}" in out


@pytest.mark.slow
def test_update_reads_metadata_files_never_wheels(updated: tuple[Path, str, list[str]]) -> None:
    _, _, requested = updated
    assert any(p.endswith(".whl.metadata") for p in requested)
    assert not [p for p in requested if p.endswith(".whl")]


@pytest.fixture
def with_overlay(
    updated: tuple[Path, str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., str]]:
    """`envdoctor install ...` in-process, reading the overlay the update wrote."""
    from typer.testing import CliRunner

    from envdoctor.cli.root import app

    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(updated[0]))
    # A machine whose pip reads no configuration: this one's constraint file caps torch below the
    # releases the loopback index serves, and the planner rightly honours it.
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    for name in [n for n in os.environ if n.startswith("PIP_") and n != "PIP_CONFIG_FILE"]:
        monkeypatch.delenv(name)
    overlay.forget()

    def install(*args: str) -> str:
        done = CliRunner().invoke(app, ["install", *args])
        assert done.exit_code == 0, done.output
        return done.output

    yield install
    monkeypatch.undo()
    overlay.forget()


@pytest.mark.slow
def test_install_plans_the_release_the_update_found(with_overlay: Callable[..., str]) -> None:
    pinned = with_overlay("--torch", "2.16.0", "--os", "linux", "--python", "3.11", "--cuda", "cpu")
    # The suite is offline (ENVDOCTOR_OFFLINE): the plan is the offline route to the exact wheels.
    assert "./torch-2.16.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl" in pinned
    assert "./torchvision-0.31.0+cpu-cp311" in pinned
    newest = with_overlay("--os", "linux", "--python", "3.12", "--cuda", "cpu", "-f", "json")
    assert json.loads(newest)["torch"] == "2.16.0"
    # The carried-forward arch list is used, and said to be borrowed.
    gpu = with_overlay("--os", "linux", "--python", "3.12", "--gpu", "sm_86", "--cuda", "cu130")
    # Python 3.12 is another machine's: its official command, not this machine's offline route.
    assert "torch==2.16.0" in gpu and "/whl/cu130" in gpu
    assert "no published arch list for torch 2.16.0" in gpu
    # Python 3.10 has no 2.16.0 wheels on the index: the newest that fits is the built-in 2.13.0.
    older = with_overlay("--os", "linux", "--python", "3.10", "--cuda", "cpu", "-f", "json")
    assert json.loads(older)["torch"] == "2.13.0"


@pytest.mark.slow
def test_install_from_a_fresh_process_reads_the_overlay(updated: tuple[Path, str, list[str]]) -> None:
    done = _run(
        updated[0], "install", "--torch", "2.16", "--os", "windows", "--python", "3.13", "--cuda", "cu128"
    )
    assert done.returncode == 0, done.stderr
    assert (
        "torch==2.16.0 torchvision==0.31.0 --index-url https://download.pytorch.org/whl/cu128" in done.stdout
    )


@pytest.mark.slow
def test_a_second_update_keeps_the_releases_an_index_did_not_show_again(
    updated: tuple[Path, str, list[str]], index: Served, tmp_path: Path
) -> None:
    cache, _, _ = updated
    copy = tmp_path / "cache"
    copy.mkdir()
    (copy / overlay.FILE_NAME).write_text((cache / overlay.FILE_NAME).read_text())
    # Only PyTorch's index this time, and not its cu133 page: nothing is lost.
    empty = tmp_path / "empty"
    empty.mkdir()
    with serve(empty) as nothing:
        done = _run(
            copy, "update", "--index-url", f"{nothing.url}/simple", "--pytorch-index", f"{index.url}/whl"
        )
    assert done.returncode == 1, done.stderr  # a partial update: said, and exit 1
    assert "Not read (3):" in done.stdout  # the empty default index's three pages
    assert "Partial update" in done.stdout
    rows = {r["torch"]: r for r in _overlay(copy)["releases"]}  # type: ignore[attr-defined]
    assert sorted(rows) == ["2.15.0", "2.16.0"]
    # The default index did not answer: its builds stay what the first update read.
    assert rows["2.16.0"]["platforms"]["linux-x86_64"]["pypi"] != "none"


@pytest.mark.slow
def test_a_page_that_failed_keeps_what_the_overlay_knew_from_it(
    updated: tuple[Path, str, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cpu page does not answer on the second update: 2.16.0's CPU build is kept, the overlay
    records the page as not read, and `install --torch 2.16.0 --cuda cpu` still plans it (it used
    to say "no CPU build for linux-x86_64" for every later run)."""
    import shutil

    cache, _, _ = updated
    copy = tmp_path / "cache"
    copy.mkdir()
    (copy / overlay.FILE_NAME).write_text((cache / overlay.FILE_NAME).read_text())
    broken = tmp_path / "index"
    build_index(broken)
    shutil.rmtree(broken / "whl" / "cpu" / "torch")  # the cpu page answers 404 now
    with serve(broken) as served:
        done = _run(
            copy, "update", "--index-url", f"{served.url}/simple", "--pytorch-index", f"{served.url}/whl"
        )
    assert done.returncode == 1, done.stdout + done.stderr
    data = _overlay(copy)
    assert any(p["url"].endswith("/whl/cpu/torch/") for p in data["pages"]["not_read"]), data["pages"]
    assert any(url.endswith("/whl/cu130/torch/") for url in data["pages"]["read"])
    rows = {r["torch"]: r for r in data["releases"]}
    assert "cpu" in rows["2.16.0"]["platforms"]["linux-x86_64"]["variants"]
    # On a machine described by --python 3.12 (this machine's constraint is not its concern).
    planned = _run(copy, "install", "--torch", "2.16.0", "--cuda", "cpu", "--os", "linux", "--python", "3.12")
    assert planned.returncode == 0, planned.stdout
    assert "torch==2.16.0" in planned.stdout and "/whl/cpu" in planned.stdout


@pytest.mark.slow
def test_a_first_update_with_a_page_that_failed_takes_its_builds_from_the_newest_known_release(
    tmp_path: Path,
) -> None:
    """No overlay before, and the cpu page does not answer: 2.16.0 is seen on the other pages only.
    Its CPU build is taken to exist as 2.13.0's does, marked assumed and said so, so that `install
    --torch 2.16.0 --cuda cpu` plans it instead of "no cpu build for linux-x86_64" (issue 20 item 6,
    as a partial update on a machine that cannot reach PyTorch's host left it)."""
    import shutil

    cache = tmp_path / "cache"
    cache.mkdir()
    broken = tmp_path / "index"
    build_index(broken)
    shutil.rmtree(broken / "whl" / "cpu" / "torch")
    with serve(broken) as served:
        done = _run(
            cache, "update", "--index-url", f"{served.url}/simple", "--pytorch-index", f"{served.url}/whl"
        )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "torch 2.16.0: cpu on linux-x86_64 taken to exist, as for" in done.stdout, done.stdout
    row = {r["torch"]: r for r in _overlay(cache)["releases"]}["2.16.0"]
    assert "cpu" in row["platforms"]["linux-x86_64"]["variants"]
    assert "platforms.linux-x86_64.variants" in row["assumed_fields"]
    assert row["torchvision"] != knowledge_newest_torchvision()  # never another release's companion
    described = ("--torch", "2.16.0", "--cuda", "cpu", "--os", "linux", "--python", "3.12")
    planned = _run(cache, "install", *described)
    assert planned.returncode == 0, planned.stdout + planned.stderr
    assert "torch==2.16.0" in planned.stdout and "/whl/cpu" in planned.stdout


def knowledge_newest_torchvision() -> str | None:
    from envdoctor import knowledge

    return knowledge.builtin_releases()[-1].torchvision


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.slow
def test_an_unreachable_index_is_one_clear_error_and_nothing_is_written(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    started = time.monotonic()
    done = _run(tmp_path, "update", "--index-url", f"{url}/simple", "--pytorch-index", f"{url}/whl")
    assert time.monotonic() - started < 15
    assert done.returncode == 2
    assert done.stderr.startswith("envdoctor: error: no index answered (")
    assert "connection refused" in done.stderr and done.stderr.count("\n") == 1
    assert not (tmp_path / overlay.FILE_NAME).exists()


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A server that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    listener.close()


@pytest.mark.slow
@pytest.mark.exclusive
def test_a_silent_index_ends_at_the_time_limit(silent_server: str, tmp_path: Path) -> None:
    started = time.monotonic()
    done = _run(
        tmp_path, "update", "--timeout", "1", "--index-url", f"{silent_server}/simple",
        "--pytorch-index", f"{silent_server}/whl",
    )  # fmt: skip
    # 1 s of waiting (the smallest --timeout: the whole suite waits while this exclusive test runs),
    # plus start-up: below one request's own limit (http.REQUEST_TIMEOUT, 5 s), which an update
    # that missed its deadline would wait for.
    assert time.monotonic() - started < 4.5
    assert done.returncode == 2
    assert "no index answered" in done.stderr and "no answer within the time limit" in done.stderr


@pytest.mark.slow
def test_offline_refuses_with_one_line(tmp_path: Path) -> None:
    done = _run(tmp_path, "update", "--offline")
    assert done.returncode == 2
    assert done.stderr.startswith("envdoctor: error: --offline: `envdoctor update` reads the package indexes")
    assert done.stderr.count("\n") == 1


@pytest.mark.slow
def test_a_corrupt_overlay_is_a_warning_and_the_built_in_data_still_plans(tmp_path: Path) -> None:
    (tmp_path / overlay.FILE_NAME).write_text('{"schema": "envdoctor.overlay/1", "releases": [')
    done = _run(tmp_path, "install", "--os", "linux", "--python", "3.11", "--cuda", "cpu", "-f", "json")
    assert done.returncode == 0
    assert json.loads(done.stdout)["torch"] == "2.13.0"
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"envdoctor: warning: ignoring the release overlay {tmp_path}")
    assert "not JSON" in done.stderr and "`envdoctor update` rewrites it" in done.stderr


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"schema": "envdoctor.overlay/2", "releases": []}', "schema envdoctor.overlay/2"),
        ("[]", "not a JSON object"),
        ('{"schema": "envdoctor.overlay/1", "releases": [{"cuda": []}]}', "release 0 has no torch version"),
    ],
)
def test_unusable_overlays_are_named(tmp_path: Path, text: str, why: str) -> None:
    path = tmp_path / overlay.FILE_NAME
    path.write_text(text)
    with pytest.raises(overlay.OverlayError, match=why):
        overlay.read(str(path))


def test_an_incomplete_release_row_is_a_warning_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from envdoctor import knowledge

    (tmp_path / overlay.FILE_NAME).write_text(
        json.dumps({"schema": overlay.SCHEMA, "releases": [{"torch": "2.16.0", "python": ["3.11"]}]})
    )
    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(tmp_path))
    overlay.forget()
    try:
        assert knowledge.releases()[-1].torch == "2.13.0"
        assert "a release row is incomplete" in capsys.readouterr().err
    finally:
        monkeypatch.undo()
        overlay.forget()


def test_the_built_in_data_wins_over_the_overlay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from envdoctor import knowledge

    builtin = knowledge.release("2.13.0")
    assert builtin is not None
    row = {"torch": "2.13.0", "cuda": [], "rocm": [], "python": ["3.99"], "pypi_linux_x86_64_default": "cpu"}
    (tmp_path / overlay.FILE_NAME).write_text(json.dumps({"schema": overlay.SCHEMA, "releases": [row]}))
    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(tmp_path))
    overlay.forget()
    try:
        assert knowledge.release("2.13.0") == builtin
    finally:
        monkeypatch.undo()
        overlay.forget()


def test_the_overlay_lives_in_envdoctors_cache_folder() -> None:
    from envdoctor.paths import cache_dir

    environ = {"HOME": "/h", "XDG_CACHE_HOME": "/x", "LOCALAPPDATA": "C:\\L"}
    assert overlay.overlay_path(environ) == os.path.join(str(cache_dir(environ)), "releases-overlay.json")
    assert overlay.overlay_path({"ENVDOCTOR_CACHE_DIR": "/c"}) == os.path.join("/c", "releases-overlay.json")


def test_the_write_is_atomic_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "sub" / overlay.FILE_NAME
    overlay.write({"schema": overlay.SCHEMA, "releases": []}, str(path))
    overlay.write({"schema": overlay.SCHEMA, "releases": [], "written": "now"}, str(path))
    assert json.loads(path.read_text())["written"] == "now"
    assert [p.name for p in path.parent.iterdir()] == [overlay.FILE_NAME]


def test_pep_691_json_and_pep_503_html_pages_list_the_same_files(own_index: Served) -> None:
    index = own_index
    url = f"{index.url}/simple/torch/"
    as_json = fetch(Request(url, SIMPLE_ACCEPT))
    as_html = fetch(Request(url, "text/html"))
    assert "vnd.pypi.simple.v1+json" in as_json.content_type
    assert "text/html" in as_html.content_type
    from_json, from_html = parse_page(as_json), parse_page(as_html)
    assert [f.filename for f in from_json] == [f.filename for f in from_html]
    assert from_json[0].metadata_url == f"{url}{from_json[0].filename}.metadata"
    assert from_json[0].metadata_sha256 == from_html[0].metadata_sha256 is not None
    # The label's "+" is percent-encoded in the PyTorch pages' links; the name comes back whole.
    cuda = parse_page(fetch(Request(f"{index.url}/whl/cu130/torch/")))
    assert any(f.filename.startswith("torch-2.16.0+cu130-") for f in cuda)
    assert any(f.yanked for f in cuda)


def test_fetch_all_keys_every_answer_by_url(own_index: Served) -> None:
    index = own_index
    urls = [f"{index.url}/whl/cpu/torch/", f"{index.url}/whl/cu999/torch/"]
    answers = fetch_all([Request(u) for u in urls], deadline=time.monotonic() + 10)
    assert answers[urls[0]].ok
    assert answers[urls[1]].status == 404 and answers[urls[1]].error == "HTTP 404"


def _port_nobody_listens_on() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    import urllib.request

    for name in [n for n in os.environ if n.lower().endswith("_proxy")]:
        monkeypatch.delenv(name)
    # As in a fresh process: urlopen's opener, once built, would keep the proxies of its time.
    monkeypatch.setattr(urllib.request, "_opener", None)
    return monkeypatch


def test_a_proxy_gone_from_the_environment_is_not_used_later(
    own_index: Served, no_proxies: pytest.MonkeyPatch
) -> None:
    """A long-lived process (the pytest plugin, a notebook): the proxies are read at each request."""
    url = f"{own_index.url}/simple/torch/"
    with no_proxies.context() as during:
        during.setenv("http_proxy", f"http://127.0.0.1:{_port_nobody_listens_on()}")
        assert fetch(Request(url)).error == "connection refused"  # it went to the proxy
    assert fetch(Request(url)).ok


def test_the_host_s_environment_names_the_proxies_of_a_reachability_check(
    own_index: Served, no_proxies: pytest.MonkeyPatch
) -> None:
    from envdoctor.host.live import LiveHost

    url = f"{own_index.url}/simple/torch/"
    dead = f"http://127.0.0.1:{_port_nobody_listens_on()}"
    assert LiveHost({"http_proxy": dead}).url_status(url, 5).status is None
    assert LiveHost({"http_proxy": dead, "no_proxy": "127.0.0.1"}).url_status(url, 5).status == 200
    assert LiveHost({}).url_status(url, 5).status == 200


@pytest.mark.parametrize(
    ("requires", "cuda", "nvidia"),
    [
        (("nvidia-cuda-runtime-cu12==12.8.*",), "12.8", True),
        (("nvidia-cuda-runtime-cu12==12.1.105", "nvidia-cudnn-cu12==8.9.2.26"), "12.1", True),
        (("nvidia-cuda-runtime==13.0.96",), "13.0", True),
        (("cuda-toolkit[cudart]==13.3.1",), "13.3", True),
        (("nvidia-cudnn-cu13==9.13.0.50",), None, True),  # the major only
        ((), None, False),
    ],
)
def test_the_cuda_version_comes_from_the_nvidia_requirements(
    requires: tuple[str, ...], cuda: str | None, nvidia: bool
) -> None:
    found = cuda_requirement(metadata("torch", "2.16.0", requires))
    assert (found.cuda, found.nvidia) == (cuda, nvidia)


def test_companion_pins_and_wheel_names() -> None:
    assert torch_pin(metadata("torchvision", "0.31.0", ("torch==2.16.0",))) == "2.16.0"
    assert torch_pin(metadata("torchvision", "0.31.0", ("torch>=2",))) is None
    from envdoctor.update.simple_index import IndexFile

    def wheel(name: str):  # type: ignore[no-untyped-def]
        return parse_wheel(IndexFile(name, f"http://x/{name}"))

    found = wheel("torch-2.16.0+cu130-cp313-cp313t-manylinux_2_28_x86_64.whl")
    assert found is None  # free-threaded only: planned like the regular cp313 build
    found = wheel("torch-2.16.0+cu130-cp312-cp312-manylinux_2_28_aarch64.whl")
    assert found is not None and found.label == "cu130" and found.platforms == {"linux-aarch64"}
    abi3 = wheel("torch-2.16.0-cp310-abi3-macosx_11_0_arm64.whl")
    assert abi3 is not None and abi3.abi3_from == "3.10" and abi3.platforms == {"macos-arm64"}
    assert wheel("torch-2.16.0.tar.gz") is None and wheel("torch-bad.whl") is None
    assert platform_of("win_amd64") == "windows-x86_64" and platform_of("linux_armv7l") is None


def test_a_missing_variant_page_is_no_failure_but_a_missing_default_page_is() -> None:
    from packaging.version import Version

    from envdoctor.update.gather import Horizon, Page, read_pages
    from envdoctor.update.http import Response

    wanted = {
        "u/cu140/torch/": Page("pytorch", "torch", "cu140", guessed=True),  # PyTorch's storage says 403
        "u/cu141/torch/": Page("pytorch", "torch", "cu141", guessed=True),
        "u/cpu/torch/": Page("pytorch", "torch", "cpu"),  # a known release's variant: its page exists
        "i/torch/": Page("default", "torch"),
    }
    answers = {
        "u/cu140/torch/": Response("u/cu140/torch/", 403, error="HTTP 403"),
        "u/cu141/torch/": Response("u/cu141/torch/", 404, error="HTTP 404"),
        "u/cpu/torch/": Response("u/cpu/torch/", 404, error="HTTP 404"),
        "i/torch/": Response("i/torch/", 403, error="HTTP 403"),
    }
    seen = read_pages(answers, wanted, Horizon(Version("2.13.0"), {}, ()))
    # A guessed variant not published yet is no failure; a known variant's page that does not
    # answer is a page not read, not a variant gone.
    assert [(f.url, f.error) for f in seen.failures] == [
        ("u/cpu/torch/", "HTTP 404"),
        ("i/torch/", "HTTP 403"),
    ]
