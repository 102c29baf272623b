"""`envdoctor install` for this machine: what is detected through the Host (a FakeHost here), what
options override, and the pip index the user's configuration points at."""

from __future__ import annotations

import pytest

from envdoctor.host.base import ChildOutcome
from envdoctor.host.fake import FakeHost
from envdoctor.install.detect import PipIndex, configured_pip_index
from envdoctor.install.session import Given, RequestError, run
from envdoctor.model.findings import PlatformInfo
from envdoctor.target import PythonInfo
from tests.install_support import text

VENV = "/home/user/project/.venv"
PYTHON = f"{VENV}/bin/python"
INFO = PythonInfo(PYTHON, "3.11.9", "CPython", 64, VENV, True, False)
# Parts of the machine these tests leave out (FakeHost is strict): no pip in the venv (its version
# changes how pip reads its files), no PCI bus listing (NVML answers for the GPUs).
LEFT_OUT = {f"{VENV}/lib/python3.11/site-packages", f"{VENV}\\Lib\\site-packages", "/sys/bus/pci/devices"}


def _python_record(version: str = "3.11.9") -> ChildOutcome:
    return ChildOutcome(
        records=(
            {
                "record": "python",
                "executable": PYTHON,
                "version": version,
                "implementation": "CPython",
                "bits": 64,
                "prefix": VENV,
                "is_venv": True,
                "is_conda": False,
            },
        ),
        returncode=0,
    )


def _nvml_record(driver: str = "535.104.05", cuda: int = 12020) -> ChildOutcome:
    gpu = {
        "index": 0,
        "name": "NVIDIA GeForce RTX 3090",
        "capability": [8, 6],
        "memory_total_bytes": 24 * 2**30,
    }
    record = {
        "record": "nvml",
        "status": "ok",
        "driver_version": driver,
        "cuda_driver_version": cuda,
        "gpus": [gpu],
    }
    return ChildOutcome(records=(record,), returncode=0)


def _host(**fields: object) -> FakeHost:
    host = FakeHost(
        environ={"VIRTUAL_ENV": VENV, "HOME": "/home/user"},
        files={PYTHON: ""},
        children={"python_info.py": _python_record(), "nvml_probe.py": _nvml_record()},
        absent=set(LEFT_OUT),
    )
    for key, value in fields.items():
        setattr(host, key, value)
    return host


def test_this_machine_is_detected() -> None:
    session = run(Given(torch="2.5.1"), _host())
    inputs = {i.name: (i.value, i.origin) for i in session.inputs}
    assert inputs["Python"] == ("3.11", f"detected ({PYTHON})")
    assert inputs["NVIDIA driver"] == ("535.104.05 (CUDA 12.2)", "detected")
    assert inputs["GPUs"] == ("NVIDIA GeForce RTX 3090 (sm_86)", "detected")
    assert session.plan.variant == "cu121"
    assert "RTX 3090 (sm_86) is in cu121's arch list" in session.plan.reason
    # pip of the examined interpreter, as in check's fixes, so the install lands in that environment
    assert text(session.plan.commands[-1]).startswith(f"{PYTHON} -m pip install torch==2.5.1 ")


def test_an_unknown_platform_here_is_a_plan_failure_not_a_usage_error() -> None:
    host = _host(platform_info=PlatformInfo("Windows", "11", "10.0.26100", "ARM64"))
    host.children = {"python_info.py": _python_record(), "nvml_probe.py": _nvml_record()}
    session = run(Given(), host)
    assert not session.plan.possible
    assert "has no wheels for windows-arm64" in session.plan.reason
    with pytest.raises(
        RequestError, match="no torch release in envdoctor's data has wheels for windows-arm64"
    ):
        run(Given(os="windows", arch="arm64"), host)


def test_options_override_detection() -> None:
    host = _host()
    session = run(Given(python="3.12", driver="580.65.06", gpus=("sm_120",)), host)
    inputs = {i.name: (i.value, i.origin) for i in session.inputs}
    assert inputs["Python"] == ("3.12", "given")
    assert inputs["NVIDIA driver"] == ("580.65.06", "given")
    assert not any(call[1:2] == ("nvml_probe.py",) for call in host.calls), "a described GPU is not detected"
    assert session.plan.variant == "cu130"


def test_another_os_detects_nothing_here() -> None:
    host = _host()
    session = run(Given(os="windows", driver="560.94"), host)
    assert host.calls == []
    assert {i.name: i.origin for i in session.inputs}["Python"] == "default"
    assert session.plan.variant == "cu126"


def test_a_missing_interpreter_is_a_usage_error() -> None:
    with pytest.raises(RequestError, match="--python /nope/python"):
        run(Given(python="/nope/python"), _host())


def test_a_machine_without_a_driver_gets_the_cpu_build() -> None:
    none = ChildOutcome(
        records=({"record": "nvml", "status": "library_not_found", "error": "not found"},), returncode=0
    )
    host = _host(children={"python_info.py": _python_record(), "nvml_probe.py": none})
    session = run(Given(), host)
    assert session.plan.variant == "cpu"
    assert {i.name: i.value for i in session.inputs}["NVIDIA driver"] == "none working"


def test_configured_pytorch_cpu_index_is_not_relied_on() -> None:
    host = _host(
        files={
            PYTHON: "",
            "/home/user/.config/pip/pip.conf": "[global]\nindex-url = https://download.pytorch.org/whl/cpu\n",
        }
    )
    session = run(Given(driver="580.65.06", gpus=("RTX 4090",)), host)
    assert session.plan.variant == "cu130"
    assert text(session.plan.commands[-1]).endswith("--index-url https://download.pytorch.org/whl/cu130")
    assert any("pip is configured with" in w for w in session.plan.warnings)


def test_configured_pypi_mirror_is_reported() -> None:
    host = _host(
        environ={
            "VIRTUAL_ENV": VENV,
            "HOME": "/home/user",
            "PIP_INDEX_URL": "https://pypi.tuna.tsinghua.edu.cn/simple",
        }
    )
    session = run(Given(os="linux", driver="560.94", gpus=("RTX 4070",)), host)
    mirror = {i.name: (i.value, i.origin) for i in session.inputs}["Mirror"]
    assert mirror[1] == "detected (PIP_INDEX_URL)" and "TUNA" in mirror[0]
    assert text(session.plan.commands[-1]).endswith("--index-url https://download.pytorch.org/whl/cu126")
    assert any("mirrors PyPI only" in w for w in session.plan.warnings)


def test_pip_config_precedence() -> None:
    files = {
        "/etc/pip.conf": "[global]\nindex-url = https://global.example/simple\n",
        "/home/user/.config/pip/pip.conf": "[global]\nindex-url = https://user.example/simple\n"
        "[install]\nindex-url = https://user-install.example/simple\n",
        f"{VENV}/pip.conf": "[global]\nindex-url = https://site.example/simple\n",
    }
    host = FakeHost(environ={"HOME": "/home/user"}, files=dict(files), absent=set(LEFT_OUT))
    # pip merges section.key over the files first, then applies [global] < [install]: the user
    # file's [install] beats the site file's [global] (mirror_facts.md 1.2, pip's cli/parser.py).
    found = configured_pip_index(host, INFO)
    assert found is not None and found.url == "https://user-install.example/simple"
    assert configured_pip_index(host, None).url == "https://user-install.example/simple"  # type: ignore[union-attr]
    host.files["/home/user/.config/pip/pip.conf"] = files["/home/user/.config/pip/pip.conf"].split(
        "[install]"
    )[0]
    found = configured_pip_index(host, INFO)
    assert (
        found is not None and found.url == "https://site.example/simple" and found.where == f"{VENV}/pip.conf"
    )
    assert configured_pip_index(host, None).url == "https://user.example/simple"  # type: ignore[union-attr]
    host.environ["PIP_CONFIG_FILE"] = "/home/user/ci/pip.conf"
    host.files["/home/user/ci/pip.conf"] = "[global]\nindex-url = https://env.example/simple\n"
    assert configured_pip_index(host, INFO).url == "https://env.example/simple"  # type: ignore[union-attr]
    host.environ["PIP_INDEX_URL"] = "https://var.example/simple"
    assert configured_pip_index(host, INFO).where == "PIP_INDEX_URL"  # type: ignore[union-attr]


def test_install_reads_pip_config_as_the_mirrors_probe_does() -> None:
    user = "/home/user/.config/pip/pip.conf"
    tuna = "https://pypi.tuna.tsinghua.edu.cn/simple"
    host = FakeHost(
        environ={"HOME": "/home/user"},
        files={"/etc/pip.conf": f"[global]\nindex-url = {tuna}\n", user: "[global]\nindex-url =\n"},
        absent=set(LEFT_OUT),
    )
    assert configured_pip_index(host, INFO) is None  # an empty value in a later file cancels it
    del host.files[user]
    assert configured_pip_index(host, INFO) == PipIndex(tuna, "/etc/pip.conf")
    host.environ["PIP_CONFIG_FILE"] = "/dev/null"  # os.devnull: pip reads no file at all
    assert configured_pip_index(host, INFO) is None


def test_windows_pip_config_and_unreadable_files() -> None:
    host = FakeHost(
        platform_info=PlatformInfo("Windows", "11", "10.0.22631", "AMD64"),
        environ={"APPDATA": "C:\\Users\\user\\AppData\\Roaming", "USERPROFILE": "C:\\Users\\user"},
        files={
            "C:\\Users\\user\\AppData\\Roaming\\pip\\pip.ini": "[global]\nindex-url=https://mirrors.aliyun.com/pypi/simple/\n"
        },
        unreadable={"C:\\ProgramData\\pip\\pip.ini"},
    )
    found = configured_pip_index(host, None)
    assert found is not None and found.url == "https://mirrors.aliyun.com/pypi/simple/"
    host.files["C:\\Users\\user\\AppData\\Roaming\\pip\\pip.ini"] = "this is [not ini"
    assert configured_pip_index(host, None) is None
