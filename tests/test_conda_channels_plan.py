"""conda plans follow the channels .condarc configures (issue 10, item 1 for conda): PyTorch's own
channel up to its last release (2.5.1, pytorch/pytorch#138506), read through a channel_alias or
custom_channels mirror rather than around it; past it, pip inside the conda environment with why,
and conda-forge's community `pytorch`/`pytorch-gpu` as the conda-only alternative, named through
the configured channels. Real .condarc files in a temporary folder, read by the real probe."""

from __future__ import annotations

from pathlib import Path

from envdoctor.host.live import LiveHost
from envdoctor.install.plan import InstallPlan, InstallTarget, plan
from envdoctor.install.sources import Sources, describe, from_facts
from envdoctor.probes.mirrors import collect_conda
from envdoctor.target import PythonInfo
from tests.install_support import text

INFO = PythonInfo("/opt/conda/bin/python", "3.11.9", "CPython", 64, "/opt/conda", False, True)
TUNA = "https://mirrors.tuna.tsinghua.edu.cn/anaconda"


def _sources(tmp_path: Path, condarc: str) -> tuple[Sources, str]:
    rc = tmp_path / "condarc"
    rc.write_text(condarc, encoding="utf-8")
    host = LiveHost(environ={"CONDARC": str(rc), "HOME": str(tmp_path / "home")})
    conda = collect_conda(host, "linux", INFO)
    return from_facts("conda", None, None, conda, None), str(rc)


def _plan(found: Sources, **fields: object) -> InstallPlan:
    target = InstallTarget(os="linux", python="3.11", manager="conda", sources=found, **fields)  # type: ignore[arg-type]
    return plan(target)


def test_the_pytorch_channel_through_a_channel_alias_mirror(tmp_path: Path) -> None:
    found, rc = _sources(tmp_path, f"channels:\n  - pytorch\n  - defaults\nchannel_alias: {TUNA}/cloud\n")
    result = _plan(found, torch="2.5.1", driver_version="560.94", gpu_capabilities=((8, 6),))
    (command,) = result.commands
    # channel names, never URLs: conda resolves them through the mirror
    assert text(command).endswith("-c pytorch -c nvidia") and "://" not in text(command)
    assert result.source == (
        f"From the pytorch channel, which conda reads at {TUNA}/cloud/pytorch (channel_alias in {rc}): "
        "PyTorch published its conda packages there up to torch 2.5.1; the command names the channel, "
        "not a URL, so conda goes through that mirror"
    )
    assert any("'-c nvidia' fails" in w for w in result.warnings)  # the alias sends nvidia there too


def test_custom_channels_mirror_pytorch_and_nvidia_stays_upstream(tmp_path: Path) -> None:
    found, rc = _sources(tmp_path, f"channels: [defaults]\ncustom_channels:\n  pytorch: {TUNA}/cloud\n")
    result = _plan(found, torch="2.5.1", driver_version="560.94", gpu_capabilities=((8, 6),))
    assert result.source is not None
    assert result.source.startswith(
        f"From the pytorch channel, which conda reads at {TUNA}/cloud/pytorch (custom_channels in {rc})"
    )
    assert not any("'-c nvidia' fails" in w for w in result.warnings)  # nvidia: conda.anaconda.org
    cpu = _plan(found, torch="2.5.1")
    assert text(cpu.commands[0]).endswith("cpuonly -c pytorch")


def test_past_the_channel_pip_with_why_and_conda_forge_first_when_it_leads(tmp_path: Path) -> None:
    found, rc = _sources(tmp_path, f"channels:\n  - conda-forge\nchannel_alias: {TUNA}/cloud\n")
    result = _plan(found, driver_version="580.65.06", gpu_capabilities=((8, 6),))
    assert [c.manager for c in result.commands] == ["pip"]
    assert describe(found) == f"conda channels conda-forge; channel_alias {TUNA}/cloud"
    assert result.source is not None
    assert result.source.startswith(
        "With pip inside the conda environment, because PyTorch's own conda channel stops at torch 2.5.1 "
        "(pytorch/pytorch#138506), and conda-forge, which your channels list, has only community builds "
        "whose versions envdoctor cannot pin"
    )
    assert result.suggestions[0] == (
        "conda-forge's community build instead (its own versions, not PyTorch's; conda reads conda-forge "
        f"at {TUNA}/cloud/conda-forge, channel_alias in {rc}): "
        "conda install -c conda-forge pytorch-gpu torchvision"
    )
    # the pytorch channel's last release is still offered, after conda-forge
    assert any(s.startswith("conda packages only: torch 2.5.1") for s in result.suggestions[1:])


def test_past_the_channel_on_defaults_conda_forge_comes_last_and_cpu_is_plain_pytorch(tmp_path: Path) -> None:
    found, _ = _sources(tmp_path, "channels:\n  - defaults\n")
    result = _plan(found)
    assert result.source is not None and "which your channels list" not in result.source
    assert result.suggestions[-1].endswith("conda install -c conda-forge pytorch torchvision")
    assert "conda's default channel_alias" in result.suggestions[-1]
