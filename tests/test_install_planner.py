"""The planner: driver x GPU architecture x release x platform, the reasons it gives, and the
commands per manager and mirror."""

from __future__ import annotations

import pytest

from envdoctor.install.commands import resolve_mirror
from envdoctor.install.plan import InstallPlan, InstallTarget, plan
from envdoctor.knowledge.gpus import parse_gpu
from tests.install_support import parse_command, text


def _plan(*gpus: str, **fields: object) -> InstallPlan:
    specs = [parse_gpu(g) for g in gpus]
    assert None not in specs
    fields.setdefault("os", "linux")
    return plan(
        InstallTarget(
            gpu_capabilities=tuple(s.capability for s in specs if s),
            gpu_names=tuple(s.label for s in specs if s),
            **fields,  # type: ignore[arg-type]
        )
    )


def _pip(result: InstallPlan) -> str:
    found = [text(c) for c in result.commands if c.manager == "pip"]
    assert found, result
    return found[-1]


# Driver -> variant boundaries (cuda_facts.md 1.1-1.2).


def test_linux_525_60_12_is_below_the_cuda12_minimum() -> None:
    result = _plan(driver_version="525.60.12")
    assert result.variant == "cu118" and result.torch == "2.7.1"


def test_linux_525_60_13_runs_cuda12_through_minor_version_compatibility() -> None:
    result = _plan(driver_version="525.60.13")
    assert result.variant == "cu126" and result.torch == "2.13.0"
    assert "minor-version compatibility" in result.reason
    assert any("560.28.03" in w for w in result.warnings)  # the native minimum is named


def test_windows_cuda12_minor_version_compatibility_starts_at_528_33() -> None:
    # NVIDIA's release-notes table gives >= 528.33 on Windows; 527.41 is only 12.0's own minimum.
    assert _plan(driver_version="527.41", os="windows").variant == "cu118"
    floor = _plan(driver_version="528.33", os="windows")
    assert floor.variant == "cu126" and "minor-version compatibility (>= 528.33)" in floor.reason


@pytest.mark.parametrize(
    ("driver", "variant", "compat"),
    [("580.97", "cu130", False), ("591.44", "cu130", False), ("595.02", "cu132", False)],
)
def test_windows_cuda13_natively_from_its_driver_branch(driver: str, variant: str, compat: bool) -> None:
    # No Windows native minimum is published for 13.x: 13.1 belongs to R590, 13.2 to R595.
    result = _plan("RTX 4090", driver_version=driver, os="windows")
    assert result.variant == variant
    assert ("minor-version compatibility" in result.reason) is compat


def test_windows_cuda13_below_its_branch_runs_through_minor_version_compatibility() -> None:
    result = _plan("RTX 4090", driver_version="580.97", os="windows", torch="2.13.0", variant="cu132")
    assert any(
        "only through minor-version compatibility; >= 595 runs it natively" in w for w in result.warnings
    )


@pytest.mark.parametrize("os_name", ["linux", "windows"])
def test_cuda13_needs_580(os_name: str) -> None:
    assert _plan("RTX 4090", driver_version="579.99", os=os_name).variant == "cu126"
    newer = _plan("RTX 4090", driver_version="580.65.06", os=os_name).variant
    assert newer is not None and newer.startswith("cu13")


def test_native_build_preferred_within_a_pinned_release() -> None:
    result = _plan("RTX 3090", driver_version="535.104.05", torch="2.5.1")
    assert result.variant == "cu121"
    assert result.reason.startswith("driver 535.104.05 supports CUDA <= 12.2 -> cu121")
    assert "RTX 3090 (sm_86) is in cu121's arch list" in result.reason


def test_nvml_cuda_version_decides_native() -> None:
    result = _plan(driver_version="535.104.05", driver_cuda="12.2", torch="2.5.1")
    assert result.variant == "cu121"


# GPU architecture (cuda_facts.md 3.3-3.4).


def test_rtx_5090_with_torch_2_6_has_no_build() -> None:
    result = _plan("RTX 5090", driver_version="580.65.06", torch="2.6")
    assert not result.possible and not result.commands
    assert "sm_120" in result.reason
    assert any("--torch 2.13.0" in s for s in result.suggestions)
    assert any("--cuda cpu" in s for s in result.suggestions)


def test_rtx_5090_gets_cu128_or_newer() -> None:
    result = _plan("RTX 5090", driver_version="570.86")
    assert result.variant == "cu128" and result.torch == "2.11.0"


def test_pascal_with_torch_2_8_gets_cu126() -> None:
    result = _plan("GTX 1080", driver_version="580.65.06", torch="2.8")
    assert result.variant == "cu126"
    assert "cu129 and cu128 lack it" in result.reason


def test_mixed_pascal_and_ampere_need_a_build_for_both() -> None:
    result = _plan("GTX 1080", "RTX 3090", driver_version="580.65.06")
    assert result.variant == "cu126"


@pytest.mark.parametrize("driver", ["550.54.14", "580.65.06"])
def test_h100_gets_cuda12_or_newer(driver: str) -> None:
    result = _plan("H100", driver_version=driver)
    assert result.variant is not None and result.variant >= "cu12"


def test_kepler_needs_cu118_up_to_2_7() -> None:
    assert _plan("K80", driver_version="470.182.03").torch == "2.7.1"
    pinned = _plan("K80", driver_version="580.65.06", torch="2.8")
    assert not pinned.possible and "sm_37" in pinned.reason


def test_jetson_is_explained() -> None:
    result = _plan("Jetson Orin", driver_version="580.65.06", machine="aarch64")
    assert not result.possible
    assert any("Jetson" in s for s in result.suggestions)


def test_arm_server_gets_an_aarch64_cuda_build() -> None:
    result = _plan("GH200", driver_version="580.65.06", machine="aarch64")
    assert result.variant == "cu130"
    command = parse_command(_pip(result))
    assert command.indexes == (("--index-url", "https://download.pytorch.org/whl/cu130"),)


def test_driver_too_old_for_everything_suggests_the_minimum() -> None:
    result = _plan("RTX 4090", driver_version="440.33")
    assert not result.possible
    assert any("upgrade the NVIDIA driver to >= 525.60.13" in s for s in result.suggestions)


def test_unknown_torch_says_so_and_offers_the_newest_known() -> None:
    result = _plan(torch="9.9")
    assert not result.possible
    assert "not in envdoctor's data yet (data as of" in result.reason
    assert result.suggestions and "torch 2.13.0 (cpu), --torch 2.13.0" in result.suggestions[0]


def test_no_driver_gives_cpu_and_macos_gives_the_default_wheel() -> None:
    cpu = _plan()
    assert cpu.variant == "cpu"
    assert parse_command(_pip(cpu)).indexes == (("--index-url", "https://download.pytorch.org/whl/cpu"),)
    mac = _plan(os="macos", machine="arm64")
    assert mac.variant == "cpu" and parse_command(_pip(mac)).indexes == ()


def test_python_limits_the_release() -> None:
    assert _plan(python="3.8").torch == "2.4.1"
    assert not _plan(python="3.8", torch="2.5.1").possible


def test_linux_pypi_default_is_a_plain_command_with_pins() -> None:
    result = _plan("RTX 4090", driver_version="580.65.06")
    assert result.variant == "cu130"
    shape = parse_command(_pip(result))
    assert shape.indexes == () and shape.packages == {"torch": "2.13.0", "torchvision": "0.28.0"}


# Managers.


def test_uv_names_an_explicit_index() -> None:
    result = _plan("RTX 4070", driver_version="560.94", os="windows", manager="uv")
    kinds = [(c.manager, c.kind) for c in result.commands]
    assert kinds == [("uv", "shell"), ("uv", "pyproject.toml"), ("uv", "shell")]
    assert text(result.commands[0]).startswith("uv pip install torch==2.13.0 torchvision==0.28.0 --index-url")
    snippet = text(result.commands[1])
    assert "[[tool.uv.index]]" in snippet and "explicit = true" in snippet
    assert 'torch = [{ index = "pytorch-cu126" }]' in snippet


def test_conda_until_2_5_1_then_pip_inside_the_env() -> None:
    old = _plan("RTX 4070", driver_version="560.94", torch="2.5.1", manager="conda")
    assert [c.manager for c in old.commands] == ["conda"]
    assert text(old.commands[0]).endswith("pytorch-cuda=12.4 -c pytorch -c nvidia")
    new = _plan("RTX 4070", driver_version="560.94", manager="conda")
    assert [c.manager for c in new.commands] == ["pip"]
    assert any("stops at 2.5.1" in w for w in new.warnings)
    assert any(s.startswith("conda packages only: torch 2.5.1") for s in new.suggestions)


# Mirrors (mirror_facts.md 4.3 and 5).


def test_pypi_mirror_never_serves_a_windows_cuda_build() -> None:
    result = _plan("RTX 4070", driver_version="560.94", os="windows", mirror=resolve_mirror("tuna", "given"))
    command = parse_command(_pip(result))
    assert command.indexes == (("--index-url", "https://download.pytorch.org/whl/cu126"),)
    assert any("no index priority" in w for w in result.warnings)


def test_pypi_mirror_serves_the_linux_default() -> None:
    result = _plan("RTX 4090", driver_version="580.65.06", mirror=resolve_mirror("tuna", "given"))
    assert parse_command(_pip(result)).indexes == (
        ("--index-url", "https://pypi.tuna.tsinghua.edu.cn/simple"),
    )


def test_detected_pypi_mirror_keeps_the_plain_command() -> None:
    mirror = resolve_mirror("https://mirrors.aliyun.com/pypi/simple/", "detected")
    result = _plan("RTX 4090", driver_version="580.65.06", mirror=mirror)
    assert parse_command(_pip(result)).indexes == ()


def test_detected_pytorch_cpu_index_is_never_relied_on() -> None:
    mirror = resolve_mirror("https://download.pytorch.org/whl/cpu", "detected")
    mirror = type(mirror)(mirror.label, "detected", None, None, mirror.known)
    result = _plan("RTX 4090", driver_version="580.65.06", mirror=mirror)
    assert parse_command(_pip(result)).indexes == (("--index-url", "https://download.pytorch.org/whl/cu130"),)


def test_nju_mirror_serves_the_wheel_index() -> None:
    result = _plan("RTX 4070", driver_version="560.94", os="windows", mirror=resolve_mirror("nju", "given"))
    assert parse_command(_pip(result)).indexes == (
        ("--index-url", "https://mirrors.nju.edu.cn/pytorch/whl/cu126"),
    )


def test_aliyun_flat_listing_gets_local_pins() -> None:
    result = _plan(
        "RTX 4070", driver_version="560.94", os="windows", mirror=resolve_mirror("aliyun", "given")
    )
    shape = parse_command(_pip(result))
    assert shape.indexes == (("-f", "https://mirrors.aliyun.com/pytorch-wheels/cu126"),)
    assert shape.packages == {"torch": "2.13.0+cu126", "torchvision": "0.28.0+cu126"}
    assert any("unverified" in w for w in result.warnings)


# check's fixes.


def test_variant_swap_uninstalls_first() -> None:
    result = _plan(
        "RTX 4070", driver_version="560.94", os="windows", torch="2.5.1", installed_torch="2.5.1+cpu"
    )
    assert [text(c).split()[1] for c in result.commands] == ["uninstall", "install"]
    again = _plan(
        "RTX 4070", driver_version="560.94", os="windows", torch="2.5.1", installed_torch="2.5.1+cu124"
    )
    assert len(again.commands) == 1


def test_native_only_skips_minor_version_compat_builds() -> None:
    result = _plan("A100", driver_version="550.54.14", torch="2.7.1", native_only=True)
    assert result.variant == "cu118"
    none_native = _plan("A100", driver_version="550.54.14", torch="2.13.0", native_only=True)
    assert not none_native.possible
    assert any(">= 560.28.03" in s for s in none_native.suggestions)
