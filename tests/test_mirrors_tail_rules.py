"""ED508-ED514, and what ED501-ED504 read from a pasted text (`envdoctor why`): index variables,
partial indexes as the only index, variant-less PyTorch indexes, [tool.uv.sources] not applied,
cross-platform locks, conda's CPU build; the install commands of a pasted log (rules/mirrors/pasted.py)."""

from __future__ import annotations

from envdoctor.engine import diagnose
from envdoctor.host.base import UrlStatus
from envdoctor.host.fake import FakeHost
from envdoctor.model.findings import Finding, Interpreter, PlatformInfo, ProbeResult, ProbeStatus
from envdoctor.model.sources import ReachCheck, ReachStatus, SourcesFacts, UvRoute
from envdoctor.probes.base import ProbeContext
from envdoctor.probes.mirrors import collect
from envdoctor.probes.nvml import Gpu, NvmlFacts
from envdoctor.probes.sources import check_reach, not_checked
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules.evidence import gather
from envdoctor.rules.mirrors import pasted
from envdoctor.rules.mirrors.urls import is_variantless_torch_index, vendor_index, wheel_variant
from envdoctor.rules.mirrors.uv_project import marker_applies
from envdoctor.target import PythonInfo, Target

LINUX = PlatformInfo("Linux", "6.8.0", "#1 SMP", "x86_64")
ARM = PlatformInfo("Linux", "6.8.0", "#1 SMP", "aarch64")
WINDOWS = PlatformInfo("Windows", "11", "10.0.22631", "AMD64")
GPU = NvmlFacts(
    status="ok", driver_version="570.133.07", cuda_driver_version=12080, gpus=(Gpu(0, "RTX 4090", (8, 9)),)
)
NO_TORCH = TorchFacts(installed=False)
CPU_TORCH = TorchFacts(installed=True, dist_version="2.12.0+cpu", version="2.12.0+cpu")
USER_PIP = "/home/user/.config/pip/pip.conf"
PYPROJECT = "/home/user/project/pyproject.toml"


def report(
    files: dict[str, str] | None = None,
    environ: dict[str, str] | None = None,
    platform: PlatformInfo = LINUX,
    torch: TorchFacts = NO_TORCH,
    pasted_text: str | None = None,
    conda: bool = False,
    sources: SourcesFacts | None = None,
) -> list[Finding]:
    windows = platform.system == "Windows"
    prefix = "C:\\Users\\user\\project\\.venv" if windows else "/home/user/project/.venv"
    python = f"{prefix}\\Scripts\\python.exe" if windows else f"{prefix}/bin/python"
    host = FakeHost(
        platform_info=platform,
        files=dict(files or {}),
        environ=dict(environ or {}),
        home_dir="C:\\Users\\user" if windows else "/home/user",
    )
    if windows:
        host.environ.setdefault("APPDATA", "C:\\Users\\user\\AppData\\Roaming")
    host.absent.add(f"{prefix}\\Lib\\site-packages" if windows else f"{prefix}/lib/python3.11/site-packages")
    info = PythonInfo(python, "3.11.7", "CPython", 64, prefix, not conda, conda)
    interpreter = Interpreter(python, "test")
    facts = collect(ProbeContext(host=host, target=Target(interpreter, info)))
    probes = [
        ProbeResult("mirrors", ProbeStatus.OK, 0.0, facts),
        ProbeResult("nvml", ProbeStatus.OK, 0.0, GPU),
        ProbeResult("torch", ProbeStatus.OK, 0.0, torch),
        ProbeResult("python", ProbeStatus.OK, 0.0, info),
    ]
    if sources is not None:
        probes.append(ProbeResult("sources", ProbeStatus.OK, 0.0, sources))
    return list(diagnose(platform, interpreter, tuple(probes), pasted=pasted_text).findings)


def codes(found: list[Finding]) -> list[str]:
    return [f.code for f in found if f.folded_under is None]


def only(found: list[Finding], code: str) -> Finding:
    matching = [f for f in found if f.code == code]
    assert len(matching) == 1, codes(found)
    return matching[0]


# --- what a URL and a pasted command are -----------------------------------------------------------


def test_urls_variants_and_vendor_indexes() -> None:
    assert wheel_variant("http://pypi-cache-cpu.svc.local:8080/whl/cpu/") == "cpu"
    assert wheel_variant("https://download.pytorch.org/whl/nightly/cu130") == "cu130"
    assert wheel_variant("https://mirrors.example/pypi/simple") is None
    assert is_variantless_torch_index("https://download.pytorch.org/whl")
    assert is_variantless_torch_index("https://download.pytorch.org/whl/torch_stable.html")
    assert not is_variantless_torch_index("https://download.pytorch.org/whl/cu100/torch_stable.html")
    assert not is_variantless_torch_index("https://download.pytorch.org/whl/cu121")
    found = vendor_index("https://pip.repos.neuron.amazonaws.com")
    assert found is not None and found.name == "aws-neuron"


def test_pasted_commands_are_read_from_prompts_prose_and_uv() -> None:
    evidence = gather(
        (),
        "PS C:\\Users\\u> pip install torch --extra-index-url https://download.pytorch.org/whl/cu116\n"
        "it would be nice if `pip install torch==1.2.0 -f "
        "https://download.pytorch.org/whl/torch_stable.html` was\n"
        "$ uv pip install --index=torch=https://download.pytorch.org/whl/cpu fastapi\n"
        "Looking in indexes: https://pypi.douban.com/simple\n",
    )
    found = pasted.commands(evidence)
    assert [c.tool for c in found] == ["pip", "pip", "uv"]
    assert found[0].extra_index_urls == ("https://download.pytorch.org/whl/cu116",)
    assert found[1].find_links == ("https://download.pytorch.org/whl/torch_stable.html",)
    assert found[2].indexes == ("https://download.pytorch.org/whl/cpu",)
    assert pasted.looking_in(evidence)[0].indexes == ("https://pypi.douban.com/simple",)
    assert pasted.commands(gather((), "")) == ()


def test_markers_of_uv_sources() -> None:
    assert marker_applies(None, "linux")
    assert not marker_applies("sys_platform == 'darwin'", "linux")
    assert marker_applies("sys_platform != 'darwin'", "linux")
    assert marker_applies("sys_platform == 'win32' or sys_platform == 'linux'", "windows")
    assert marker_applies("platform_machine == 'x86_64'", "linux")  # not judged: taken to hold


# --- ED508 ------------------------------------------------------------------------------------------


def test_a_cpu_index_in_pip_extra_index_url_on_a_gpu_machine() -> None:
    found = report(
        environ={"PIP_EXTRA_INDEX_URL": "http://pypi-cache-cpu.svc.local:8080/whl/cpu/"}, torch=CPU_TORCH
    )
    hit = only(found, "ED508")
    assert hit.fixes[0].commands == ("unset PIP_EXTRA_INDEX_URL",)
    assert "2.12.0+cpu" in hit.detail and "even one that names its own --index-url" in hit.detail
    assert hit.fixes[1].summary.startswith("Then install torch with the index this machine needs")


def test_a_pypi_mirror_in_uv_variables_where_pypi_torch_is_cpu_only() -> None:
    mirror = "https://pypi.tuna.tsinghua.edu.cn/simple"
    found = report(environ={"UV_INDEX": mirror}, platform=WINDOWS)
    assert only(found, "ED508").fixes[0].commands == ("Remove-Item Env:UV_INDEX",)
    arm = report(environ={"UV_DEFAULT_INDEX": "https://mirrors.aliyun.com/pypi/simple"}, platform=ARM,
                 torch=TorchFacts(installed=True, dist_version="2.9.0+cpu", version="2.9.0+cpu"))  # fmt: skip
    assert "ED508" in codes(arm)
    assert "ED508" not in codes(report(environ={"UV_INDEX": mirror}))  # Linux x86_64: PyPI's torch is CUDA


def test_a_fitting_cuda_index_in_a_variable_is_not_wrong() -> None:
    found = report(environ={"PIP_EXTRA_INDEX_URL": "https://download.pytorch.org/whl/cu126"})
    assert "ED508" not in codes(found)


def test_a_cpu_pytorch_index_in_the_variable_folds_the_extra_index_finding_under_it() -> None:
    found = report(
        files={USER_PIP: "[global]\nindex-url = https://mirrors.aliyun.com/pypi/simple/\n"},
        environ={"PIP_EXTRA_INDEX_URL": "https://download.pytorch.org/whl/cpu"},
    )
    assert "ED508" in codes(found)
    assert [f.folded_under for f in found if f.code == "ED502"] == ["ED508"]


# --- ED509 ------------------------------------------------------------------------------------------


def test_a_vendor_index_as_pips_only_index() -> None:
    found = report(files={USER_PIP: "[global]\nindex-url = https://pip.repos.neuron.amazonaws.com\n"})
    hit = only(found, "ED509")
    assert any(
        "global.extra-index-url https://pip.repos.neuron.amazonaws.com" in c for c in hit.fixes[0].commands
    )
    assert any(c.endswith("pip config --user unset global.index-url") for c in hit.fixes[0].commands)


def test_pytorchs_index_as_the_global_index_is_moved_to_the_torch_command_not_to_extra() -> None:
    found = report(files={USER_PIP: "[global]\nindex-url = https://download.pytorch.org/whl/cu126\n"})
    hit = only(found, "ED509")
    assert not any("extra-index-url" in c for f in hit.fixes for c in f.commands)


def test_a_pasted_only_index_with_a_missing_dependency() -> None:
    text = (
        "pip install torch==2.10.0 --index-url https://download.pytorch.org/whl/cu130\n"
        'ERROR: No matching distribution found for cuda-bindings==13.0.3; platform_system == "Linux"'
    )
    hit = only(report(pasted_text=text), "ED509")
    assert "cuda-bindings==13.0.3" in hit.title and "--extra-index-url" in hit.fixes[0].summary
    torch_only = (
        "pip install torch==9.9 --index-url https://download.pytorch.org/whl/cu130\n"
        "No matching distribution found for torch==9.9"
    )
    assert "ED509" not in codes(report(pasted_text=torch_only))  # torch itself missing: another cause


# --- ED510, ED502, ED501, ED504 from pasted commands -----------------------------------------------


def test_variantless_indexes_in_config_and_in_a_pasted_command() -> None:
    found = report(files={USER_PIP: "[global]\nextra-index-url = https://download.pytorch.org/whl\n"})
    assert "ED510" in codes(found)
    text = "pip install torch==1.2.0 -f https://download.pytorch.org/whl/torch_stable.html"
    assert "ED510" in codes(report(pasted_text=text))


def test_pasted_pip_and_uv_commands_that_make_pytorchs_index_one_source_among_several() -> None:
    pip_text = "pip install -r requirements.txt --extra-index-url https://download.pytorch.org/whl/cu126"
    hit = only(report(pasted_text=pip_text), "ED502")
    assert "--extra-index-url" in hit.title
    uv_text = (
        "uv pip install --index-url https://download.pytorch.org/whl/cu128 "
        "--extra-index-url https://mirror.example/simple torch"
    )
    assert "ranks another index" in only(report(pasted_text=uv_text), "ED502").title
    good = "pip install torch --index-url https://download.pytorch.org/whl/cu126"
    assert "ED502" not in codes(report(pasted_text=good))


def test_a_pasted_mirror_command_on_windows_and_a_dead_mirror() -> None:
    text = "pip install torch -i https://pypi.tuna.tsinghua.edu.cn/simple"
    assert "ED501" in codes(report(platform=WINDOWS, pasted_text=text))
    dead = "pip install pycocotools -i https://pypi.douban.com/simple\nLooking in indexes: https://pypi.douban.com/simple"
    hit = only(report(pasted_text=dead), "ED504")
    assert "dropped" in hit.title


def test_conda_output_asking_for_pytorch_newer_than_the_frozen_channel() -> None:
    text = (
        "Channels:\n - pytorch\n - nvidia\n - defaults\n"
        "PackagesNotFoundError: The following packages are not available:\n\n  - pytorch=2.6*\n"
    )
    hit = only(report(pasted_text=text, conda=True), "ED503")
    assert "2.6" in hit.title and "2.5.1" in hit.title
    old = "Channels:\n - pytorch\n  - pytorch=2.4*\n"
    assert "ED503" not in codes(report(pasted_text=old, conda=True))


# --- ED511, ED512 -----------------------------------------------------------------------------------

UV_PROJECT = (
    '[project]\nname = "x"\nversion = "0"\n\n[[tool.uv.index]]\nname = "pytorch-cpu"\n'
    'url = "https://download.pytorch.org/whl/cpu"\nexplicit = true\n'
)


def test_uv_sources_not_applied_to_the_installed_torch() -> None:
    routes = SourcesFacts(uv_routes=(UvRoute("torch", "pytorch-cpu", PYPROJECT),))
    cuda = TorchFacts(installed=True, dist_version="2.9.0", version="2.9.0", cuda="12.8")
    hit = only(report(files={PYPROJECT: UV_PROJECT}, torch=cuda, sources=routes), "ED511")
    assert hit.fixes[0].commands == ("uv sync --reinstall-package torch",)
    cpu = TorchFacts(installed=True, dist_version="2.9.0+cpu", version="2.9.0+cpu")
    assert "ED511" not in codes(report(files={PYPROJECT: UV_PROJECT}, torch=cpu, sources=routes))
    mac_only = SourcesFacts(
        uv_routes=(UvRoute("torch", "pytorch-cpu", PYPROJECT, "sys_platform == 'darwin'"),)
    )
    assert "ED511" not in codes(report(files={PYPROJECT: UV_PROJECT}, torch=cuda, sources=mac_only))


def test_a_uv_project_reading_every_package_from_pytorchs_index_and_lock_errors() -> None:
    default = UV_PROJECT.replace("explicit = true", "default = true")
    assert "ED512" in codes(report(files={PYPROJECT: default}))
    assert "ED512" not in codes(report(files={PYPROJECT: UV_PROJECT}))
    text = (
        "error: Distribution `markupsafe==3.0.2 @ registry+https://download.pytorch.org/whl/cu126` can't be "
        "installed because it doesn't have a source distribution or wheel for the current platform"
    )
    hit = only(report(platform=WINDOWS, pasted_text=text), "ED512")
    assert "markupsafe" in hit.title


# --- ED513 ------------------------------------------------------------------------------------------


def test_condas_cpu_build_is_told_from_a_pip_cpu_wheel() -> None:
    conda_cpu = TorchFacts(installed=True, dist_version="1.11.0", version="1.11.0")
    hit = only(report(conda=True, torch=conda_cpu), "ED513")
    assert hit.fixes[-1].commands == ("conda list pytorch", "conda list cpuonly")
    pip_cpu = TorchFacts(installed=True, dist_version="2.0.1+cpu", version="2.0.1+cpu")
    assert "ED513" not in codes(report(conda=True, torch=pip_cpu))
    assert "ED513" not in codes(report(conda=False, torch=conda_cpu))


# --- ED514 ------------------------------------------------------------------------------------------

DEAD = UrlStatus(None, "Name or service not known")
REFUSED = UrlStatus(None, "Connection refused")


def _asked(answers: dict[str, UrlStatus], offline: bool = False) -> SourcesFacts:
    """The sources probe's reachability step, asked through a host that answers as scripted."""
    if offline:
        return SourcesFacts(reach=not_checked(list(answers), "--offline"), offline=True)
    return SourcesFacts(reach=check_reach(FakeHost(urls=answers), list(answers)))


def test_a_configured_index_that_does_not_resolve_is_named_with_its_variable() -> None:
    url = "https://ci:s3cr3t@nexus.corp.example/repository/pypi/simple"
    found = report(environ={"PIP_INDEX_URL": url}, sources=_asked({url: DEAD}))
    hit = only(found, "ED514")
    assert "nexus.corp.example" in hit.title and "s3cr3t" not in hit.title + hit.detail
    assert "(from versions: none)" in hit.detail and "VPN" in hit.detail
    assert hit.fixes[0].commands == ("unset PIP_INDEX_URL",)
    assert "HTTPS_PROXY" in hit.fixes[1].summary


def test_a_refused_extra_index_in_pip_conf_is_removed_there_keeping_the_others() -> None:
    dead, alive = "http://10.0.0.5:8080/simple", "https://download.pytorch.org/whl/cu124"
    conf = f"[global]\nextra-index-url =\n    {dead}\n    {alive}\n"
    found = report(files={USER_PIP: conf}, sources=_asked({dead: REFUSED, alive: UrlStatus(200)}))
    hit = only(found, "ED514")
    assert "refused" in hit.detail and "five retries" in hit.detail
    assert hit.fixes[0].commands == (
        "/home/user/project/.venv/bin/python -m pip config --user set global.extra-index-url "
        "https://download.pytorch.org/whl/cu124",
    )


def test_a_uv_index_variable_that_does_not_answer() -> None:
    url = "https://mirror.example.invalid/simple"
    found = report(environ={"UV_INDEX": url}, sources=_asked({url: DEAD}))
    hit = only(found, "ED514")
    assert hit.title.startswith("uv's") and "Failed to fetch" in hit.detail
    assert hit.fixes[0].commands == ("unset UV_INDEX",)


def test_slow_offline_unconfigured_proxied_or_known_dropped_indexes_are_not_this_finding() -> None:
    url = "https://nexus.corp.example/simple"
    slow = UrlStatus(None, "timed out")
    assert "ED514" not in codes(report(environ={"PIP_INDEX_URL": url}, sources=_asked({url: slow})))
    late = SourcesFacts(reach=(ReachCheck(url, ReachStatus.UNREACHABLE, "no answer within 2 s", 2.0),))
    assert "ED514" not in codes(report(environ={"PIP_INDEX_URL": url}, sources=late))
    offline = _asked({url: DEAD}, offline=True)
    assert "ED514" not in codes(report(environ={"PIP_INDEX_URL": url}, sources=offline))
    # PyPI's default index is asked too, but nobody configured it: an air-gapped machine is no problem.
    assert "ED514" not in codes(report(sources=_asked({url: DEAD})))
    # pip reaches it through its own proxy setting, which the reachability check does not use.
    conf = f"[global]\nindex-url = {url}\nproxy = http://proxy.corp.example:3128\n"
    assert "ED514" not in codes(report(files={USER_PIP: conf}, sources=_asked({url: DEAD})))
    douban = "https://pypi.douban.com/simple"
    dropped = report(environ={"PIP_INDEX_URL": douban}, sources=_asked({douban: DEAD}))
    assert "ED504" in codes(dropped) and "ED514" not in codes(dropped)
