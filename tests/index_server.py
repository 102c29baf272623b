"""A package index on 127.0.0.1 for `envdoctor update`: PyTorch-style per-variant pages (PEP 503 HTML)
and a default index whose torch page is PEP 691 JSON, with stub wheels under real file names and
PEP 658 metadata files beside them. The wheels are a few bytes: update must never download them.
"""

from __future__ import annotations

import hashlib
import html
import http.server
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

JSON_TYPE = "application/vnd.pypi.simple.v1+json"

CUDA12 = ("nvidia-cuda-runtime-cu12==12.8.*", "nvidia-cudnn-cu12==9.10.2.21", "nvidia-cublas-cu12==12.8.4.1")
CUDA13 = ("nvidia-cuda-runtime==13.0.96", "nvidia-cudnn-cu13==9.13.0.50")
CUDA133 = ("cuda-toolkit[cublas,cudart]==13.3.1",)


def metadata(name: str, version: str, requires: tuple[str, ...]) -> str:
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f'Requires-Dist: {r}; platform_system == "Linux"' for r in requires]
    lines += ["Requires-Dist: filelock", "Requires-Dist: optree>=0.13.0; extra == 'optree'"]
    return "\n".join(lines) + "\n\nThe long description.\n"


@dataclass
class Wheel:
    filename: str
    requires: tuple[str, ...] = ()
    with_metadata: bool = True
    yanked: bool = False


@dataclass
class Project:
    wheels: list[Wheel] = field(default_factory=list)
    as_json: bool = False  # PEP 691 JSON when the client asks for it


def _write_project(folder: Path, name: str, project: Project) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    anchors = []
    files = []
    for wheel in project.wheels:
        (folder / wheel.filename).write_bytes(b"not a real wheel")
        _, version = wheel.filename.split("-")[:2]
        entry: dict[str, object] = {"filename": wheel.filename, "url": wheel.filename, "hashes": {}}
        extra = ""
        if wheel.with_metadata:
            text = metadata(name, version, wheel.requires).encode()
            (folder / f"{wheel.filename}.metadata").write_bytes(text)
            digest = hashlib.sha256(text).hexdigest()
            extra = f' data-dist-info-metadata="sha256={digest}" data-core-metadata="sha256={digest}"'
            entry["core-metadata"] = {"sha256": digest}
        if wheel.yanked:
            extra += ' data-yanked=""'
            entry["yanked"] = True
        href = html.escape(wheel.filename.replace("+", "%2B"))
        anchors.append(f'<a href="{href}#sha256=00"{extra}>{html.escape(wheel.filename)}</a><br/>')
        files.append(entry)
    page = "<!DOCTYPE html>\n<html><body><h1>Links for {}</h1>\n{}\n</body></html>\n"
    (folder / "index.html").write_text(page.format(name, "\n".join(anchors)))
    if project.as_json:
        data = {"meta": {"api-version": "1.1"}, "name": name, "files": files}
        (folder / "index.json").write_text(json.dumps(data))


def linux(name: str, version: str, python: str, label: str = "") -> str:
    local = f"+{label}" if label else ""
    return f"{name}-{version}{local}-cp{python}-cp{python}-manylinux_2_28_x86_64.whl"


def build_index(root: Path) -> None:
    """torch 2.16.0 (and 2.15.0) beyond the built-in data, a pre-release and a yanked file to skip."""
    pythons = ("311", "312", "313")
    variant_pages: dict[str, list[Wheel]] = {"cpu": [], "cu128": [], "cu130": [], "cu133": []}
    for version in ("2.15.0", "2.16.0"):
        for python in pythons:
            variant_pages["cpu"].append(Wheel(linux("torch", version, python, "cpu")))
            variant_pages["cpu"].append(Wheel(f"torch-{version}+cpu-cp{python}-cp{python}-win_amd64.whl"))
            variant_pages["cpu"].append(Wheel(f"torch-{version}-cp{python}-none-macosx_11_0_arm64.whl"))
            variant_pages["cu128"].append(Wheel(linux("torch", version, python, "cu128"), CUDA12))
            variant_pages["cu128"].append(Wheel(f"torch-{version}+cu128-cp{python}-cp{python}-win_amd64.whl"))
            variant_pages["cu130"].append(Wheel(linux("torch", version, python, "cu130"), CUDA13))
            aarch64 = f"torch-{version}+cu130-cp{python}-cp{python}-manylinux_2_28_aarch64.whl"
            variant_pages["cu130"].append(Wheel(aarch64, CUDA13))
    # A CUDA version newer than envdoctor's driver table, for 2.16.0 only.
    variant_pages["cu133"] += [Wheel(linux("torch", "2.16.0", p, "cu133"), CUDA133) for p in pythons]
    variant_pages["cu130"].append(Wheel(linux("torch", "2.17.0.dev20260901", "311", "cu130"), CUDA13))
    variant_pages["cu130"].append(Wheel(linux("torch", "2.16.1", "311", "cu130"), CUDA13, yanked=True))
    # An unlabelled CPU wheel mirrored onto a CUDA page belongs to no CUDA variant.
    variant_pages["cu128"].append(Wheel(linux("torch", "2.16.0", "314")))
    variant_pages["cpu"].append(Wheel(linux("torch", "2.13.0", "311", "cpu")))  # already known
    # Every variant a known release has keeps its page on PyTorch's index (a 404 there is a page
    # not read); those with nothing beyond the data are empty here.
    from envdoctor import knowledge

    for release in knowledge.builtin_releases()[-6:]:
        for variant in release.variants:
            variant_pages.setdefault(variant, [])
    for variant, wheels in variant_pages.items():
        _write_project(root / "whl" / variant / "torch", "torch", Project(wheels))
    _write_project(root / "whl" / "cpu" / "torchvision", "torchvision", Project([]))
    _write_project(root / "whl" / "cpu" / "torchaudio", "torchaudio", Project([]))

    default = [Wheel(linux("torch", "2.16.0", p), CUDA12) for p in pythons]
    default += [Wheel(f"torch-2.16.0-cp{p}-cp{p}-win_amd64.whl") for p in pythons]
    default += [Wheel(linux("torch", "2.15.0", p), CUDA12, with_metadata=False) for p in pythons]
    _write_project(root / "simple" / "torch", "torch", Project(default, as_json=True))
    vision = [
        Wheel(linux("torchvision", "0.31.0", "311"), ("torch==2.16.0",)),
        Wheel(linux("torchvision", "0.30.0", "311"), ("torch==2.15.0",)),
    ]
    _write_project(root / "simple" / "torchvision", "torchvision", Project(vision))
    _write_project(root / "simple" / "torchaudio", "torchaudio", Project([]))


class _Handler(http.server.SimpleHTTPRequestHandler):
    def send_head(self):  # type: ignore[no-untyped-def]
        # PEP 691: a JSON page for clients that ask for it, where the project has one.
        folder = Path(self.translate_path(self.path))
        wants_json = JSON_TYPE in self.headers.get("Accept", "")
        if folder.is_dir() and wants_json and (folder / "index.json").is_file():
            body = (folder / "index.json").read_bytes()
            self.send_response(200)
            self.send_header("Content-Type", JSON_TYPE)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            import io

            return io.BytesIO(body)
        return super().send_head()

    def log_message(self, format: str, *args: object) -> None:
        self.server.requests.append(self.path)  # type: ignore[attr-defined]
        self.server.headers.append(self.headers.get("Authorization", ""))  # type: ignore[attr-defined]


@dataclass
class Served:
    url: str
    requests: list[str]
    headers: list[str] = field(default_factory=list)  # the Authorization header of each request


@contextmanager
def serve(root: Path) -> Iterator[Served]:
    """Serve `root` on 127.0.0.1 (an ephemeral port) in a thread for the duration."""

    def handler(*args: object) -> _Handler:
        return _Handler(*args, directory=str(root))  # type: ignore[arg-type]

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)  # type: ignore[arg-type]
    server.requests = []  # type: ignore[attr-defined]
    server.headers = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Served(
            f"http://127.0.0.1:{server.server_address[1]}",
            server.requests,  # type: ignore[attr-defined]
            server.headers,  # type: ignore[attr-defined]
        )
    finally:
        server.shutdown()
        server.server_close()
