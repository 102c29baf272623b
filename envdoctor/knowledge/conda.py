"""The `pytorch` Anaconda channel: which releases it has and the shape of the official conda commands
(conda.json). It stopped at 2.5.1; after that conda users install with pip inside the env."""

from __future__ import annotations

from packaging.version import Version

from envdoctor.knowledge import Release, load_table, variant_cuda
from envdoctor.util.records import record


def _table() -> dict[str, object]:
    table: dict[str, object] = load_table("conda.json")
    return table


def last_release() -> str:
    channel = _table()["pytorch_channel"]
    assert isinstance(channel, dict)
    return str(channel["last"])


def on_pytorch_channel(release: Release, platform: str) -> bool:
    """Whether `conda install pytorch==X -c pytorch` can give this release on `platform`."""
    channel = _table()["pytorch_channel"]
    assert isinstance(channel, dict)
    if platform not in channel["platforms"]:
        return False
    if not Version(channel["first"]) <= release.version <= Version(channel["last"]):
        return False
    if platform == "macos-x86_64":
        return release.version <= Version(channel["macos_x86_64_last"])
    return True


@record
class CondaSpec:
    """The parts of an official conda command: the packages with pins and the channels."""

    packages: tuple[str, ...]  # "pytorch==2.3.1", "torchvision==0.18.1", ..., "pytorch-cuda=12.1"
    channels: tuple[str, ...]  # "pytorch", "nvidia"


def _pins(release: Release) -> dict[str, str | None]:
    pins = {"pytorch": release.torch, "torchvision": release.torchvision, "torchaudio": release.torchaudio}
    for row in _table()["pin_overrides"]:  # type: ignore[attr-defined]
        if row["torch"] == release.torch:
            pins.update(torchvision=row["torchvision"], torchaudio=row["torchaudio"])
    return pins


def conda_spec(release: Release, variant: str, platform: str) -> CondaSpec | None:
    """The official conda command's packages and channels; None where the channel has no such build."""
    if not on_pytorch_channel(release, platform):
        return None
    packages = [f"{name}=={pin}" for name, pin in _pins(release).items() if pin]
    table = _table()
    if platform.startswith("macos"):
        if variant != "cpu":
            return None
        form = table["macos_form"]
        assert isinstance(form, dict)
        return CondaSpec(tuple(packages), tuple(form["channels"]))
    if variant == "cpu":
        form = table["cpu_form"]
        assert isinstance(form, dict)
        return CondaSpec((*packages, form["package"]), tuple(form["channels"]))
    cuda = variant_cuda(variant)
    if cuda is None or cuda not in release.cuda:
        return None  # ROCm and XPU never had conda packages on the pytorch channel
    for form in table["cuda_forms"]:  # type: ignore[attr-defined]
        if not Version(form["from"]) <= release.version <= Version(form["to"]):
            continue
        if platform.startswith("windows") and cuda in form["windows_excluded"]:
            return None
        channels = (*form["channels"], *form["extra_channels"].get(cuda, ()))
        return CondaSpec((*packages, form["package"].format(cuda=cuda)), tuple(channels))
    return None


def after_cutoff() -> dict[str, str]:
    """What official pages and the community say conda users do after the cut-off, with sources."""
    notes = _table()["after_cutoff"]
    assert isinstance(notes, dict)
    return {str(k): str(v) for k, v in notes.items()}
