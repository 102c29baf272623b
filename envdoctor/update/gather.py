"""What the indexes show, in two rounds of parallel requests under one deadline.

1. Project pages: PyTorch's per-variant torch pages (<pytorch-index>/<variant>/torch/), its CPU
   torchvision/torchaudio pages, and the default index's torch, torchvision and torchaudio pages.
   Wheel file names give the releases, variants, platforms and Python versions.
2. PEP 658 metadata of one wheel per new build: the CUDA version a build needs (its nvidia-*
   requirements), the variant plain `pip install torch` gives per platform, and which torch each
   new torchvision/torchaudio release requires.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from packaging.version import Version

from envdoctor.knowledge import Release, cuda_variant
from envdoctor.update.http import SIMPLE_ACCEPT, Request, Response, fetch_all
from envdoctor.update.simple_index import IndexFile, IndexPageError, parse_page
from envdoctor.update.wheels import Wheel, cuda_requirement, parse_wheel, torch_pin
from envdoctor.util.records import record

METADATA_LIMIT = 4 * 2**20
COMPANIONS = ("torchvision", "torchaudio")
_RECENT = 6  # the variants of this many newest known releases are looked up, and their neighbours


@record
class Failure:
    url: str
    error: str
    page: Page | None = None  # which page it was: its data is kept from the overlay before


@record
class Page:
    source: str  # "pytorch" (a per-variant page) or "default" (the default index)
    project: str  # "torch", "torchvision", "torchaudio"
    variant: str = ""  # the PyTorch page's variant
    guessed: bool = False  # a variant no known release has (the next CUDA): a 404 says "none yet"


def candidate_variants(known: tuple[Release, ...]) -> tuple[str, ...]:
    """The variant pages to read: those of the newest known releases, and the next CUDA and ROCm
    versions after the newest known ones (a page that does not exist is a quick 404)."""
    found: dict[str, None] = {"cpu": None}
    for release in known[-_RECENT:]:
        found.update(dict.fromkeys(release.variants))
    cudas = sorted({Version(c) for r in known for c in r.cuda})
    if cudas:
        newest = cudas[-1]
        for nxt in (
            f"{newest.major}.{newest.minor + 1}",
            f"{newest.major}.{newest.minor + 2}",
            f"{newest.major + 1}.0",
        ):
            found[cuda_variant(nxt)] = None
    rocms = sorted({Version(r) for release in known for r in release.rocm})
    if rocms:
        newest = rocms[-1]
        for nxt in (f"{newest.major}.{newest.minor + 1}", f"{newest.major + 1}.0"):
            found[f"rocm{nxt}"] = None
    return tuple(found)


def pages(
    pytorch_index: str, default_index: str | None, variants: tuple[str, ...], known: tuple[str, ...] = ()
) -> dict[str, Page]:
    """Every project page to read, by URL; `known`: the variants some known release has (their
    pages exist: a 404 there is a page not read, never a variant gone)."""
    found: dict[str, Page] = {}
    base = pytorch_index.rstrip("/") + "/"
    for variant in variants:
        found[f"{base}{variant}/torch/"] = Page("pytorch", "torch", variant, guessed=variant not in known)
    for project in COMPANIONS:
        found[f"{base}cpu/{project}/"] = Page("pytorch", project, "cpu")
    if default_index:
        index = default_index.rstrip("/") + "/"
        for project in ("torch", *COMPANIONS):
            found[f"{index}{project}/"] = Page("default", project)
    return found


@dataclass
class Build:
    """One release x platform (x variant) as the pages show it."""

    pythons: set[str] = field(default_factory=set)
    sample: Wheel | None = None  # the wheel whose metadata is read


@dataclass
class Seen:
    """Everything the project pages showed about releases newer than the data."""

    builds: dict[str, dict[str, dict[str, Build]]] = field(default_factory=dict)  # torch/platform/variant
    default: dict[str, dict[str, Build]] = field(default_factory=dict)  # torch/platform, default index
    companions: dict[str, dict[str, Wheel]] = field(default_factory=dict)  # project/version -> a wheel
    failures: list[Failure] = field(default_factory=list)
    read: list[str] = field(default_factory=list)  # the URLs of the pages that answered
    pages: int = 0  # pages that answered
    default_answered: bool = False  # the default index's torch page was read


def _pythons_of(wheel: Wheel, known_pythons: tuple[str, ...]) -> set[str]:
    found = set(wheel.pythons)
    if wheel.abi3_from is not None:  # cp310-abi3: every Python from there that any release knows
        found.update(p for p in known_pythons if Version(p) >= Version(wheel.abi3_from))
    return found


def _prefer(current: Wheel | None, wheel: Wheel) -> Wheel:
    """One sample per build: a Linux x86_64 wheel with metadata if there is one."""
    if current is None:
        return wheel

    def score(w: Wheel) -> tuple[bool, bool]:
        return (w.file.metadata_url is not None, "linux-x86_64" in w.platforms)

    return wheel if score(wheel) > score(current) else current


def _belongs(wheel: Wheel, page: Page) -> bool:
    """Whether a wheel on a page is that page's build: PyTorch mirrors other variants' (and
    unlabelled CPU) wheels onto some variant pages; the default index's torch has no label."""
    if page.source == "default":
        return wheel.label is None
    if page.variant == "cpu":
        return wheel.label in (None, "cpu")
    return wheel.label == page.variant


@record
class Horizon:
    """How far the built-in data reaches: only what lies beyond is gathered."""

    torch: Version
    companions: Mapping[str, Version]
    pythons: tuple[str, ...]  # every Python version the data knows (for abi3 wheels)

    @classmethod
    def of(cls, known: tuple[Release, ...], pythons: tuple[str, ...]) -> Horizon:
        companions = {
            project: max(
                (Version(str(getattr(r, project))) for r in known if getattr(r, project)),
                default=Version("0"),
            )
            for project in COMPANIONS
        }
        return cls(known[-1].version, companions, pythons)


def _add(seen: Seen, wheel: Wheel, page: Page, horizon: Horizon) -> None:
    if page.project == "torch":
        if Version(wheel.public) <= horizon.torch:
            return
        for platform in wheel.platforms:
            if page.source == "pytorch":
                by_variant = seen.builds.setdefault(wheel.public, {}).setdefault(platform, {})
                build = by_variant.setdefault(page.variant, Build())
            else:
                build = seen.default.setdefault(wheel.public, {}).setdefault(platform, Build())
            build.pythons |= _pythons_of(wheel, horizon.pythons)
            build.sample = _prefer(build.sample, wheel)
    elif Version(wheel.public) > horizon.companions.get(page.project, Version("0")):
        found = seen.companions.setdefault(page.project, {})
        found[wheel.public] = _prefer(found.get(wheel.public), wheel)


def read_pages(answers: Mapping[str, Response], wanted: Mapping[str, Page], horizon: Horizon) -> Seen:
    seen = Seen()
    for url, page in wanted.items():
        answer = answers[url]
        if page.guessed and answer.status in (403, 404, 410):
            continue  # an unpublished (guessed) variant: PyTorch's storage answers 403 for those
        if not answer.ok:
            seen.failures.append(Failure(url, answer.error or f"HTTP {answer.status}", page))
            continue
        try:
            files = parse_page(answer)
        except IndexPageError as exc:
            seen.failures.append(Failure(url, f"not an index page ({exc})", page))
            continue
        seen.read.append(url)
        seen.pages += 1
        if page.source == "default" and page.project == "torch":
            seen.default_answered = True
        for file in files:
            wheel = None if file.yanked else parse_wheel(file)
            if wheel is None or wheel.project != page.project:
                continue
            if wheel.version.is_prerelease or wheel.version.is_devrelease or not _belongs(wheel, page):
                continue
            _add(seen, wheel, page, horizon)
    return seen


@dataclass
class Metadata:
    """What the metadata round learned."""

    cuda: dict[tuple[str, str, str], str | None] = field(default_factory=dict)  # torch/platform/variant
    pypi: dict[tuple[str, str], str | None] = field(default_factory=dict)  # torch/platform -> variant
    pins: dict[str, dict[str, str]] = field(default_factory=dict)  # project/version -> torch
    failures: list[Failure] = field(default_factory=list)
    read: int = 0


def _samples(seen: Seen) -> Iterator[tuple[str, Wheel]]:
    """(kind, wheel) for every wheel whose metadata is worth a request."""
    for by_platform in seen.builds.values():
        for by_variant in by_platform.values():
            for variant, build in by_variant.items():
                if variant.startswith("cu") and build.sample is not None:
                    yield "pytorch", build.sample
    for default in seen.default.values():
        for build in default.values():
            if build.sample is not None:
                yield "default", build.sample
    for by_version in seen.companions.values():
        for wheel in by_version.values():
            yield "companion", wheel


def _text(answer: Response, file: IndexFile) -> str | None:
    if not answer.ok:
        return None
    if file.metadata_sha256 and hashlib.sha256(answer.body).hexdigest() != file.metadata_sha256.lower():
        return None
    return answer.body.decode("utf-8", errors="replace")


def read_metadata(seen: Seen, deadline: float) -> Metadata:
    found = Metadata()
    files = {w.file.metadata_url: w.file for _, w in _samples(seen) if w.file.metadata_url}
    answers = fetch_all([Request(url, limit=METADATA_LIMIT) for url in files], deadline)
    texts: dict[str, str] = {}
    for url, file in files.items():
        text = _text(answers[url], file)
        if text is None:
            found.failures.append(Failure(url, answers[url].error or "metadata hash mismatch"))
        else:
            texts[url] = text
    found.read = len(texts)

    def text_of(build: Build) -> str | None:
        url = build.sample.file.metadata_url if build.sample is not None else None
        return texts.get(url) if url else None

    for torch, by_platform in seen.builds.items():
        for platform, by_variant in by_platform.items():
            for variant, build in by_variant.items():
                text = text_of(build)
                if text is not None:
                    found.cuda[(torch, platform, variant)] = cuda_requirement(text).cuda
    for torch, default in seen.default.items():
        for platform, build in default.items():
            text = text_of(build)
            if text is None:
                continue
            need = cuda_requirement(text)
            if need.cuda:
                found.pypi[(torch, platform)] = cuda_variant(need.cuda)
            elif not need.nvidia:
                found.pypi[(torch, platform)] = "cpu"
    for project, by_version in seen.companions.items():
        for version, wheel in by_version.items():
            text = texts.get(wheel.file.metadata_url or "")
            pin = torch_pin(text) if text is not None else None
            if pin is not None:
                found.pins.setdefault(project, {})[version] = pin
    return found


def gather(
    pytorch_index: str,
    default_index: str | None,
    known: tuple[Release, ...],
    pythons: tuple[str, ...],
    deadline: float,
) -> tuple[Seen, Metadata]:
    every = tuple(dict.fromkeys(v for release in known for v in release.variants))
    wanted = pages(pytorch_index, default_index, candidate_variants(known), every)
    answers = fetch_all([Request(url, SIMPLE_ACCEPT) for url in wanted], deadline)
    seen = read_pages(answers, wanted, Horizon.of(known, pythons))
    if seen.pages == 0:
        return seen, Metadata()
    return seen, read_metadata(seen, deadline)
