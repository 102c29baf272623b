"""Every command envdoctor prints resolves with pip's own resolver (issue 20, the property tier).

A machine like this one is built from local stand-ins of every source kind: a find-links folder
holding torch 2.13.0+cpu, a file:// PEP 503 index holding torch 2.14.1 and its torchvision, the
default index as a 127.0.0.1 PEP 503 index that wants credentials (given in the URL, as private
indexes are configured), a constraint file capping torch at 2.14.1, and PyTorch's wheel host
unreachable (every request that is not to 127.0.0.1 goes to a proxy that answers nothing). On it,
`install` (this machine, a GPU described by --gpu/--driver, uv), and check's fixes with their
alternatives for recorded machines whose sources are this one's, print commands; each pip
command runs with `--dry-run --ignore-installed --report` (no scratch environment needed: the
resolver ignores what is installed) and must resolve to a torch and companions of one variant,
the torch the plan says it installs. A command that names PyTorch's unreachable host is allowed
only as the plan's explicit download-elsewhere route (it says why and never runs here).
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import os
import shlex
import socketserver
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ENVDOCTOR = [sys.executable, "-m", "envdoctor"]
USER, TOKEN = "reader", "tokResolvePLANTED"


def _wheel(folder: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> str:
    """A real, minimal wheel (pure, any platform) pip can read and resolve."""
    dist = f"{name}-{version}"
    filename = f"{name}-{version}-py3-none-any.whl"
    files = {
        f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        + "".join(f"Requires-Dist: {r}\n" for r in requires),
        f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: envdoctor-tests\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(folder / filename, "w") as archive:
        record = []
        for path, text in files.items():
            archive.writestr(path, text)
            digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
            record.append(f"{path},sha256={digest},{len(text)}")
        archive.writestr(
            f"{dist}.dist-info/RECORD", "\n".join([*record, f"{dist}.dist-info/RECORD,,"]) + "\n"
        )
    return filename


def _simple_index(root: Path, projects: dict[str, list[tuple[str, tuple[str, ...]]]]) -> None:
    """A PEP 503 index: <root>/<project>/index.html linking the project's wheels beside it."""
    for project, wheels in projects.items():
        folder = root / project
        names = [_wheel(folder, project, version, requires) for version, requires in wheels]
        links = "".join(f'<a href="{name}">{name}</a>\n' for name in names)
        (folder / "index.html").write_text(f"<html><body>\n{links}</body></html>\n", encoding="utf-8")


class _AuthIndex(http.server.SimpleHTTPRequestHandler):
    """The default index's stand-in: 401 without the credentials."""

    def do_GET(self) -> None:
        wanted = "Basic " + base64.b64encode(f"{USER}:{TOKEN}".encode()).decode()
        if self.headers.get("Authorization") != wanted:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="index"')
            self.end_headers()
            return
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:
        pass


class _Silent(socketserver.BaseRequestHandler):
    """The proxy every other request goes to: it closes without a word (PyTorch's host unreachable)."""

    def handle(self) -> None:
        self.request.close()


@dataclass(frozen=True)
class Machine:
    env: dict[str, str]
    root: Path


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Machine]:
    root = tmp_path_factory.mktemp("sources")
    _wheel(root / "wheels", "torch", "2.13.0+cpu")
    _simple_index(
        root / "local" / "simple",
        {"torch": [("2.14.1", ())], "torchvision": [("0.29.1", ("torch==2.14.1",))]},
    )
    _simple_index(
        root / "default" / "simple",
        {"torch": [("2.13.0", ())], "torchvision": [("0.28.0", ("torch==2.13.0",))]},
    )
    (root / "constraints.txt").write_text("torch<=2.14.1\n", encoding="utf-8")

    def handler(*args: object) -> _AuthIndex:
        return _AuthIndex(*args, directory=str(root / "default"))  # type: ignore[arg-type]

    index = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)  # type: ignore[arg-type]
    proxy = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Silent)
    for server in (index, proxy):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    default = f"http://{USER}:{TOKEN}@127.0.0.1:{index.server_address[1]}/simple"
    (root / "pip.conf").write_text(
        "[global]\n"
        f"index-url = {default}\n"
        f"extra-index-url = {(root / 'local' / 'simple').as_uri()}\n"
        f"find-links = {root / 'wheels'}\n"
        f"constraint = {root / 'constraints.txt'}\n",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_", "CONDA", "XDG_"))}
    env.pop("ENVDOCTOR_OFFLINE", None)  # the reachability checks run: PyTorch's host is silent
    proxy_url = f"http://127.0.0.1:{proxy.server_address[1]}"
    env.update(
        HOME=str(root),
        PIP_CONFIG_FILE=str(root / "pip.conf"),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        HTTP_PROXY=proxy_url,
        HTTPS_PROXY=proxy_url,
        http_proxy=proxy_url,
        https_proxy=proxy_url,
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
    )
    try:
        yield Machine(env, root)
    finally:
        for server in (index, proxy):
            server.shutdown()
            server.server_close()


@dataclass(frozen=True)
class Resolved:
    versions: dict[str, str]  # project -> version pip chose
    error: str | None


def _resolve(machine: Machine, argv: list[str]) -> Resolved:
    """`argv` (a pip install command for this interpreter) as pip's resolver answers it."""
    assert argv[1:4] == ["-m", "pip", "install"], argv
    report = machine.root / "report.json"
    report.unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet", "--report",
         str(report), *argv[4:]],
        env=machine.env, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        return Resolved({}, done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed")
    data = json.loads(report.read_text(encoding="utf-8"))
    return Resolved({i["metadata"]["name"].lower(): i["metadata"]["version"] for i in data["install"]}, None)


def _coherent(resolved: Resolved) -> str | None:
    """None when torch and its companions are of one variant: the same local label, or none."""
    if resolved.error is not None:
        return f"does not resolve: {resolved.error}"
    torch = resolved.versions.get("torch")
    if torch is None:
        return f"installs no torch: {resolved.versions}"
    label = torch.partition("+")[2]
    for companion in ("torchvision", "torchaudio"):
        version = resolved.versions.get(companion)
        if version is not None and version.partition("+")[2] != label:
            return f"a broken pair: torch {torch} with {companion} {version}"
    return None


def _pip_commands(texts: list[str]) -> list[list[str]]:
    """The pip commands for this interpreter among printed command lines."""
    found = []
    for text in texts:
        argv = shlex.split(text)
        if len(argv) > 3 and argv[1:4] == ["-m", "pip", "install"]:
            found.append([sys.executable, *argv[1:]])
    return found


def _install(machine: Machine, *options: str) -> dict[str, object]:
    done = subprocess.run(
        [*ENVDOCTOR, "install", "--python", sys.executable, *options, "-f", "json"],
        env=machine.env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    assert TOKEN not in done.stdout + done.stderr and "Traceback" not in done.stderr
    data: dict[str, object] = json.loads(done.stdout)
    return data


def _alternatives(data: dict[str, object]) -> list[str]:
    """The commands inside the plan's suggestions ("... : <command>")."""
    found = []
    for suggestion in data.get("suggestions", []):  # type: ignore[union-attr]
        _, colon, tail = str(suggestion).rpartition(": ")
        if colon and " install " in f" {tail} ":
            found.append(tail)
    return found


def test_this_machines_install_command_and_alternatives_resolve_to_one_variant(machine: Machine) -> None:
    data = _install(machine)
    assert data.get("route") == "local", data
    commands = [str(c["command"]) for c in data["commands"]]  # type: ignore[union-attr]
    for argv in _pip_commands(commands + _alternatives(data)):
        resolved = _resolve(machine, argv)
        assert _coherent(resolved) is None, (argv, _coherent(resolved))
    main = _resolve(machine, _pip_commands(commands)[0])
    assert main.versions["torch"] == "2.13.0+cpu"
    assert data["torch"] == "2.13.0" and data["torchvision"] is None and data.get("left_out")


def test_a_gpu_plan_here_is_an_explicit_route_never_a_command_that_fails(machine: Machine) -> None:
    data = _install(machine, "--gpu", "RTX 4090", "--driver", "550.54.15")
    commands = [str(c["command"]) for c in data["commands"]]  # type: ignore[union-attr]
    if data.get("route") == "offline":  # PyTorch's host is silent: download elsewhere, said why
        assert "did not answer" in str(data.get("source")), data.get("source")
        assert all("download.pytorch.org" not in c for c in commands), commands
    else:
        for argv in _pip_commands(commands):
            assert _coherent(_resolve(machine, argv)) is None, argv
    for argv in _pip_commands(_alternatives(data)):
        assert _coherent(_resolve(machine, argv)) is None, argv
    assert "cu130" not in " ".join(map(str, data.get("suggestions", []))), data.get("suggestions")  # type: ignore[arg-type]


# check's fixes, the companions' included, come from the planner (issue 20 item 3). The machines:
# a CPU torch from the find-links folder whose torchvision is PyPI's CUDA build (the pair fix must
# not name PyTorch's silent host), and no torch at all. linux-torchvision-built-for-other-torch is
# not among them: its pair (torch 2.5.1, PyPI's unlabelled cu124 torchvision) is one this stand-in
# index does not model, and pip's resolver cannot tell an unlabelled PyPI build's variant.
@pytest.mark.parametrize(
    "fixture",
    ["linux-cpu-torch-find-links-pypi-torchvision-nms-missing", "linux-cpu-no-torch"],
)
def test_checks_fixes_on_this_machines_sources_resolve(
    machine: Machine, fixture: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recorded machine's facts, with the sources this machine's probes read (pip's configuration
    and what the local sources hold, reachability asked through the silent proxy): every pip
    command of every finding's fixes resolves to one variant."""
    from dataclasses import replace

    from envdoctor.engine import diagnose
    from envdoctor.host.live import LiveHost
    from envdoctor.model.findings import ProbeResult, ProbeStatus
    from envdoctor.probes import mirrors, sources
    from envdoctor.snapshot import load
    from envdoctor.target import PythonInfo
    from tests.fixture_support import FIXTURES

    for name in [n for n in os.environ if n.startswith(("PIP_", "UV_", "CONDA"))]:
        monkeypatch.delenv(name)
    for name, value in machine.env.items():
        monkeypatch.setenv(name, value)
    snap = load(str(FIXTURES / f"{fixture}.json"))
    host = LiveHost(machine.env)
    info = next((p.facts for p in snap.probes if isinstance(p.facts, PythonInfo)), None)
    mirror_facts = (
        mirrors.MirrorFacts(
            mirrors.collect_pip(host, "linux", info),
            mirrors.collect_conda(host, "linux", info) if info else mirrors.CondaConfig(),
            mirrors.collect_uv(host, "linux"),
            home=str(machine.root),
        )
        if info
        else None
    )
    assert mirror_facts is not None
    looked = sources.collect_sources(
        host, "linux", info, offline=False, pip=mirror_facts.pip, uv=mirror_facts.uv
    )
    probes = [p for p in snap.probes if p.probe not in ("mirrors", "sources")]
    probes += [
        ProbeResult("mirrors", ProbeStatus.OK, 0.0, mirror_facts),
        ProbeResult("sources", ProbeStatus.OK, 0.0, looked),
    ]
    interpreter = replace(snap.interpreter, path=sys.executable)
    report = diagnose(snap.platform, interpreter, tuple(probes), source=fixture)
    texts = [c for f in report.findings for fix in f.fixes for c in fix.commands]
    commands = _pip_commands(texts)
    assert commands, [f.code for f in report.findings]
    for argv in commands:
        assert "download.pytorch.org" not in " ".join(argv), f"a fix names a host that did not answer: {argv}"
        problem = _coherent(_resolve(machine, argv))
        assert problem is None, (argv, problem)
