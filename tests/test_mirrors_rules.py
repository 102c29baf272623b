"""ED501-ED507 on configurations read by the real probe from recorded files and variables."""

from __future__ import annotations

from envdoctor.engine import evaluate
from envdoctor.host.fake import FakeHost
from envdoctor.knowledge import mirrors as known
from envdoctor.model.findings import Finding, Interpreter, PlatformInfo, ProbeResult, ProbeStatus
from envdoctor.probes.base import ProbeContext
from envdoctor.probes.mirrors import collect
from envdoctor.probes.nvml import Gpu, NvmlFacts
from envdoctor.probes.torch_build import TorchFacts
from envdoctor.rules import mirrors as rules
from envdoctor.rules.base import RuleContext
from envdoctor.rules.mirrors import urls
from envdoctor.target import PythonInfo, Target

LINUX = PlatformInfo("Linux", "6.1.0", "#1 SMP", "x86_64")
WINDOWS = PlatformInfo("Windows", "11", "10.0.22631", "AMD64")
MACOS = PlatformInfo("Darwin", "24.1.0", "Darwin Kernel", "arm64")
VENV = "/home/user/project/.venv"
WIN_VENV = "C:\\Users\\user\\project\\.venv"
USER_PIP = "/home/user/.config/pip/pip.conf"
WIN_PIP = "C:\\Users\\user\\AppData\\Roaming\\pip\\pip.ini"
GPU = NvmlFacts(
    status="ok", driver_version="560.94", cuda_driver_version=12060, gpus=(Gpu(0, "RTX 4070", (8, 9)),)
)
NO_GPU = NvmlFacts(status="library_not_found")
CPU_TORCH = TorchFacts(installed=True, dist_version="2.5.1+cpu", version="2.5.1+cpu")
NO_TORCH = TorchFacts(installed=False)


def findings(
    files: dict[str, str] | None = None,
    environ: dict[str, str] | None = None,
    platform: PlatformInfo = LINUX,
    nvml: NvmlFacts | None = GPU,
    torch: TorchFacts | None = NO_TORCH,
    **host_fields: object,
) -> list[Finding]:
    windows = platform.system == "Windows"
    prefix = WIN_VENV if windows else VENV
    python = f"{prefix}\\Scripts\\python.exe" if windows else f"{prefix}/bin/python"
    host = FakeHost(
        platform_info=platform,
        files=dict(files or {}),
        environ=dict(environ or {}),
        home_dir="C:\\Users\\user" if windows else "/home/user",
        **host_fields,  # type: ignore[arg-type]
    )
    if windows:
        host.environ.setdefault("APPDATA", "C:\\Users\\user\\AppData\\Roaming")
    # No pip in the examined environment unless a test scripts one (FakeHost is strict).
    host.absent.add(f"{prefix}\\Lib\\site-packages" if windows else f"{prefix}/lib/python3.11/site-packages")
    info = PythonInfo(python, "3.11.7", "CPython", 64, prefix, True, False)
    interpreter = Interpreter(python, "test")
    facts = collect(ProbeContext(host=host, target=Target(interpreter, info)))
    results = [ProbeResult("mirrors", ProbeStatus.OK, 0.0, facts)]
    for name, value in (("nvml", nvml), ("torch", torch), ("python", info)):
        if value is not None:
            results.append(ProbeResult(name, ProbeStatus.OK, 0.0, value))
    ctx = RuleContext.build(platform, interpreter, tuple(results))
    return list(evaluate(ctx, rules.RULES))


def codes(found: list[Finding]) -> list[str]:
    return [f.code for f in found]


def only(found: list[Finding], code: str) -> Finding:
    matching = [f for f in found if f.code == code]
    assert len(matching) == 1, codes(found)
    return matching[0]


TUNA = "https://pypi.tuna.tsinghua.edu.cn/simple"

# ---------------------------------------------------------------------------------------- ED501


def test_ed501_mirror_index_on_windows_with_a_gpu() -> None:
    found = findings({WIN_PIP: f"[global]\nindex-url = {TUNA}\n"}, platform=WINDOWS, torch=CPU_TORCH)
    finding = only(found, "ED501")
    assert "Tsinghua" in finding.title and "only CPU builds" in finding.title
    assert "~\\AppData\\Roaming\\pip\\pip.ini line 2" in finding.detail
    assert "2.5.1+cpu" in finding.detail
    (fix,) = finding.fixes  # TUNA runs no PyTorch wheel mirror: only the official index is offered
    assert "--index-url https://download.pytorch.org/whl/cu126" in fix.commands[0]
    assert fix.commands[0].startswith(f"{WIN_VENV}\\Scripts\\python.exe -m pip install torch==")


def test_ed501_offers_the_operators_wheel_mirror() -> None:
    nju = "https://mirror.nju.edu.cn/pypi/web/simple"
    finding = only(findings({WIN_PIP: f"[global]\nindex-url = {nju}\n"}, platform=WINDOWS), "ED501")
    mirrored = finding.fixes[1]
    assert "Nanjing" in mirrored.summary
    assert "--index-url https://mirrors.nju.edu.cn/pytorch/whl/cu126" in mirrored.commands[0]


def test_ed501_for_a_uv_default_index() -> None:
    found = findings(environ={"UV_DEFAULT_INDEX": TUNA}, platform=WINDOWS)
    assert "uv's index" in only(found, "ED501").title
    # uv's torch-backend bypasses the configured index for torch: nothing to warn about.
    assert "ED501" not in codes(
        findings(environ={"UV_DEFAULT_INDEX": TUNA, "UV_TORCH_BACKEND": "auto"}, platform=WINDOWS)
    )


def test_ed501_stays_quiet_where_the_mirror_is_fine() -> None:
    conf = {WIN_PIP: f"[global]\nindex-url = {TUNA}\n"}
    assert "ED501" not in codes(findings(conf, platform=WINDOWS, nvml=NO_GPU, torch=CPU_TORCH))  # no GPU
    linux = {USER_PIP: f"[global]\nindex-url = {TUNA}\n"}
    assert "ED501" not in codes(findings(linux))  # Linux wheels on PyPI are CUDA builds
    assert "ED501" not in codes(findings(conf, platform=MACOS, nvml=None))  # no CUDA on macOS
    with_torch_index = {
        WIN_PIP: f"[global]\nindex-url = {TUNA}\nextra-index-url = https://download.pytorch.org/whl/cu126\n"
    }
    assert codes(findings(with_torch_index, platform=WINDOWS)) == ["ED502"]


# ---------------------------------------------------------------------------------------- ED502


def test_ed502_pytorch_index_as_extra_index() -> None:
    conf = {
        USER_PIP: "[global]\nindex-url = https://mirrors.aliyun.com/pypi/simple/\n"
        "extra-index-url = https://download.pytorch.org/whl/cu116 https://other.example/simple\n"
    }
    finding = only(findings(conf), "ED502")
    assert "no index priority" in finding.detail and "local label" in finding.detail
    (fix,) = finding.fixes
    # The other extra index stays (pip config edits the user file, the last user file); then torch
    # comes from the PyTorch index with its variant pinned.
    assert fix.commands == (
        f"{VENV}/bin/python -m pip config --user set global.extra-index-url https://other.example/simple",
        f"{VENV}/bin/python -m pip install torch==2.13.0+cu126 torchvision==0.28.0 "
        "--index-url https://download.pytorch.org/whl/cu126",
    )


def test_ed502_from_a_variable_with_the_cpu_index_on_a_gpu_machine() -> None:
    environ = {"PIP_EXTRA_INDEX_URL": "https://download.pytorch.org/whl/cpu"}
    found = findings(environ=environ)
    finding = only(found, "ED502")
    assert "CPU variant" in finding.detail
    # The variable is the cause (ED508): ED502 is folded under it, whose fix unsets the variable.
    assert finding.folded_under == "ED508"
    assert only(found, "ED508").fixes[0].commands[0] == "unset PIP_EXTRA_INDEX_URL"
    windows = only(findings(environ=environ, platform=WINDOWS), "ED508")
    assert windows.fixes[0].commands[0] == "Remove-Item Env:PIP_EXTRA_INDEX_URL"


def test_ed502_not_when_the_pytorch_index_is_the_index() -> None:
    conf = {
        USER_PIP: f"[global]\nindex-url = https://download.pytorch.org/whl/cu126\nextra-index-url = {TUNA}\n"
    }
    assert codes(findings(conf)) == []


def test_ed502_setting_in_a_file_pip_config_cannot_edit() -> None:
    conf = {
        "/etc/xdg/pip/pip.conf": "[global]\nfind-links = https://mirror.sjtu.edu.cn/pytorch-wheels/torch_stable.html\n"
    }
    finding = only(findings(conf), "ED502")
    # `pip config --global` edits /etc/pip.conf, not the XDG file: say where, give no wrong command.
    (fix,) = finding.fixes
    assert len(fix.commands) == 1 and " install " in fix.commands[0]
    assert "by hand: delete the `find-links` entry at /etc/xdg/pip/pip.conf line 2" in fix.summary


# ---------------------------------------------------------------------------------------- ED503

CONDARC = "/home/user/.condarc"


def test_ed503_pytorch_and_nvidia_channels() -> None:
    conf = {CONDARC: "channels:\n  - pytorch\n  - nvidia\n  - defaults\n"}
    finding = only(findings(conf, environ={"CONDA_EXE": "/opt/conda/bin/conda"}), "ED503")
    assert (
        finding.title == "conda is set to use the pytorch and nvidia channels, which stopped at torch 2.5.1"
    )
    assert "pytorch in channels (~/.condarc line 1): torch up to 2.5.1" in finding.detail
    remove = (
        "conda config --file /home/user/.condarc --remove channels pytorch",
        "conda config --file /home/user/.condarc --remove channels nvidia",
    )
    pip_way, forge_way = finding.fixes
    assert pip_way.commands[:2] == remove and " -m pip install torch==" in pip_way.commands[2]
    # The same command never twice in one report: the alternative keeps only its own command and
    # says where the shared ones are.
    assert forge_way.commands == ("conda install -c conda-forge pytorch",)
    assert forge_way.summary.endswith("(2 more commands are shown in the fix above)")
    assert "a current torch" in finding.detail
    from_variable = only(findings(environ={"CONDA_CHANNELS": "pytorch,conda-forge"}), "ED503")
    assert from_variable.fixes[0].commands[0] == "unset CONDA_CHANNELS"


def test_ed503_mirror_url_of_the_channel_and_installed_torch() -> None:
    url = "https://mirrors.tuna.tsinghua.edu.cn/anaconda/cloud/pytorch/"
    conf = {CONDARC: f"channels: [{url}, defaults]\n"}
    new_torch = TorchFacts(installed=True, version="2.7.1+cu126", dist_version="2.7.1+cu126", cuda="12.6")
    finding = only(findings(conf, torch=new_torch), "ED503")
    assert "For the installed torch 2.7.1+cu126 conda" in finding.detail
    old_torch = TorchFacts(installed=True, version="2.5.1", dist_version="2.5.1", cuda="12.4")
    assert codes(findings(conf, torch=old_torch)) == []


def test_ed503_not_for_the_mirror_templates_custom_channels() -> None:
    # TUNA's help page maps pytorch in custom_channels for everyone; that alone installs nothing.
    conf = {
        CONDARC: "channels: [defaults]\ncustom_channels:\n  pytorch: https://mirrors.tuna.tsinghua.edu.cn/anaconda/cloud\n"
    }
    assert codes(findings(conf)) == []


# ---------------------------------------------------------------------------------------- ED504


def test_ed504_stale_and_dropped_mirrors() -> None:
    conf = {
        USER_PIP: "[global]\nindex-url = https://pypi.mirrors.ustc.edu.cn/simple\n"
        f"extra-index-url = {TUNA} https://pypi.douban.com/simple/\n"
    }
    found = [f for f in findings(conf) if f.code == "ED504"]
    assert len(found) == 2
    stale, dropped = found
    assert "stale" in stale.title
    assert stale.fixes[0].commands == (
        f"{VENV}/bin/python -m pip config --user set global.index-url https://mirrors.ustc.edu.cn/pypi/simple",
    )
    assert "dropped" in dropped.title
    assert dropped.fixes[0].commands == (
        f"{VENV}/bin/python -m pip config --user set global.extra-index-url {TUNA}",
    )


def test_ed504_conda_channel_alias() -> None:
    conf = {CONDARC: "channel_alias: https://mirrors.ustc.edu.cn/anaconda/cloud\n"}
    finding = only(findings(conf), "ED504")
    assert "channel_alias" in finding.detail and finding.fixes


def test_ed504_a_working_conda_mirror_is_flagged_only_for_the_channel_it_lacks() -> None:
    # USTC's Anaconda mirror caches conda-forge and bioconda, but has no pytorch channel of its own.
    ustc = "https://mirrors.ustc.edu.cn/anaconda/cloud"
    fine = {
        CONDARC: f"channels:\n  - {ustc}/conda-forge/\ncustom_channels:\n  bioconda: {ustc}\n"
        "default_channels:\n  - https://mirrors.ustc.edu.cn/anaconda/pkgs/main\n"
    }
    assert "ED504" not in codes(findings(fine))
    lacking = {CONDARC: f"custom_channels:\n  conda-forge: {ustc}\n  pytorch: {ustc}\n"}
    finding = only(findings(lacking), "ED504")
    assert finding.title == (
        "conda takes the pytorch channel from USTC Anaconda mirror, which does not carry it"
    )
    assert "custom_channels.pytorch" in finding.detail and finding.fixes
    by_url = {CONDARC: f"channels:\n  - {ustc}/pytorch\n  - conda-forge\n"}
    assert "pytorch channel" in only(findings(by_url), "ED504").title


# ---------------------------------------------------------------------------------------- ED505

TOKEN = "glpat-PLANTED0123"


def test_ed505_credentials_in_each_tool() -> None:
    conf = {
        USER_PIP: f"[global]\nextra-index-url = https://__token__:{TOKEN}@gitlab.example.com/api/v4/simple\n",
        CONDARC: f"channels:\n  - https://conda.example.com/t/{TOKEN}/internal\n",
        "/home/user/project/uv.toml": f'[[index]]\nname = "corp"\nurl = "https://{TOKEN}@pkgs.example.com/simple"\n',
    }
    found = [f for f in findings(conf) if f.code == "ED505"]
    assert [f.title.split(" is written in ")[1] for f in found] == [
        "~/.config/pip/pip.conf",
        "~/.condarc",
        "~/project/uv.toml",
    ]
    pip_fix, conda_fix, uv_fix = (f.fixes[0] for f in found)
    assert pip_fix.commands == (
        f"{VENV}/bin/python -m pip config --user set global.extra-index-url "
        "https://gitlab.example.com/api/v4/simple",
    )
    assert "https://conda.example.com/internal" in conda_fix.summary
    assert uv_fix.commands == ("export UV_INDEX_CORP_USERNAME=USER", "export UV_INDEX_CORP_PASSWORD=TOKEN")


def test_ed505_not_for_variables_and_found_in_masked_values() -> None:
    environ = {"PIP_INDEX_URL": f"https://user:{TOKEN}@pkgs.example.com/simple"}
    assert "ED505" not in codes(findings(environ=environ))
    masked = {USER_PIP: "[global]\nindex-url = https://user:****@pkgs.example.com/simple\n"}
    assert "ED505" in codes(findings(masked))  # a snapshot holds masked values; still a finding


# ---------------------------------------------------------------------------------- ED506/ED507


def test_ed506_files_the_tools_refuse() -> None:
    conf = {
        "/etc/pip.conf": "index-url = https://x.example/simple\n",
        CONDARC: "channels:\n  - defaults\n- pytorch\n",
    }
    environ = {"UV_CONFIG_FILE": "/srv/uv.toml", "CONDA_EXE": "/opt/conda/bin/conda"}
    found = findings(conf, environ=environ)
    assert codes(found) == ["ED506", "ED506", "ED506"]
    pip, conda, uv = found
    assert "/etc/pip.conf: line 1: a setting comes before any [section] header" in pip.title
    assert pip.fixes[0].commands == ("mv /etc/pip.conf /etc/pip.conf.bak",)
    assert pip.fixes[1].commands == (f"{VENV}/bin/python -m pip config debug",)
    assert "~/.condarc: line 3" in conda.title
    assert "UV_CONFIG_FILE names it" in uv.title
    assert "`uv pip install`, `uv sync` and `uv add` fails" in uv.detail and "`uv install`" not in uv.detail


def test_a_fifo_as_pip_or_uv_configuration_hangs_them() -> None:
    """pip (configparser) and uv read a FIFO to its end and wait forever: an error, not a skip."""
    found = findings(
        environ={"PIP_CONFIG_FILE": "/tmp/fifo"},
        fifos={"/tmp/fifo", "/home/user/.config/uv/uv.toml"},
    )
    assert codes(found) == ["ED506", "ED506"]
    pip, uv = found
    assert (
        pip.title == "pip would wait forever reading /tmp/fifo: it is a FIFO (named pipe), not a regular file"
    )
    assert "every `pip install` hangs" in pip.detail
    assert pip.fixes[0].summary == "Point PIP_CONFIG_FILE at a regular file, or unset it"
    assert pip.fixes[0].commands == ("unset PIP_CONFIG_FILE",)
    assert "silently skips" not in pip.title and "readable" not in pip.fixes[0].summary
    assert uv.title.startswith("uv would wait forever reading ~/.config/uv/uv.toml")
    assert uv.fixes[0].summary == "Replace the FIFO ~/.config/uv/uv.toml with a regular file, or remove it"


def test_a_broken_conda_file_without_conda_is_a_warning() -> None:
    """No conda here (no conda target, no CONDA_EXE): a file that would stop conda breaks nothing
    today, so it is ED507 (warning), worded as what happens once conda is in use."""
    fifo = findings(environ={"CONDARC": "/tmp/fifo"}, fifos={"/tmp/fifo"})
    assert codes(fifo) == ["ED507"]
    assert fifo[0].title == (
        "conda would fail on its configuration file /tmp/fifo once in use: "
        "it is a FIFO (named pipe), not a regular file"
    )
    assert "conda is not in use here" in fifo[0].detail
    malformed = findings({CONDARC: "channels:\n  - defaults\n- pytorch\n"})
    assert codes(malformed) == ["ED507"]
    in_use = findings(
        environ={"CONDARC": "/tmp/fifo", "CONDA_EXE": "/opt/conda/bin/conda"}, fifos={"/tmp/fifo"}
    )
    assert codes(in_use) == ["ED506"]
    assert in_use[0].title.startswith("conda cannot use its configuration file /tmp/fifo: it is a FIFO")


def test_ed507_files_the_tools_skip() -> None:
    found = findings(
        {"/home/user/project/pyproject.toml": "[tool.uv\n"},
        environ={"PIP_CONFIG_FILE": "/home/user/pip.conf"},
        dirs={"/etc/pip.conf": ()},
        unreadable={USER_PIP},
    )
    assert codes(found) == ["ED507"] * 4
    titles = " | ".join(f.title for f in found)
    assert "pip silently skips /etc/pip.conf: it is a folder" in titles
    assert "it cannot be read (Permission denied)" in titles
    assert "PIP_CONFIG_FILE names it, but there is no such file" in titles
    assert "uv silently skips ~/project/pyproject.toml: line 1" in titles


def test_a_plain_configuration_has_no_findings() -> None:
    conf = {
        "/etc/xdg/pip/pip.conf": "[global]\nconstraint = /etc/pip-constraints.txt\n",
        USER_PIP: "[global]\nfind-links = /srv/wheels\nextra-index-url = file:///srv/pypi/simple\n",
    }
    assert findings(conf, environ={"PIP_FIND_LINKS": "/srv/wheels"}) == []
    assert findings({USER_PIP: f"[global]\nindex-url = {TUNA}\n"}, platform=WINDOWS, nvml=NO_GPU) == []


def test_helpers() -> None:
    official = known.recognise("https://download.pytorch.org/whl/nightly/cu130")
    assert official is not None
    assert urls.variant_of("https://download.pytorch.org/whl/nightly/cu130", official) == "cu130"
    assert urls.channel_name("https://mirror.sjtu.edu.cn/anaconda/cloud/pytorch/") == "pytorch"
    assert urls.channel_name("pytorch/label/nightly") == "pytorch"
    assert urls.without_credentials("https://u:p@h.example/t/tok/x?y=1") == "https://h.example/x?y=1"
    assert urls.without_credentials("https://h.example/s?token=abc&page=2") == "https://h.example/s?page=2"
    pypi = known.pypi_default_url()
    if pypi is not None:
        assert urls.pypi_mirror(pypi) is None  # PyPI itself is not a mirror


def test_no_index_is_read_as_pip_reads_it() -> None:
    extra = {"PIP_EXTRA_INDEX_URL": "https://download.pytorch.org/whl/cu126"}
    assert codes(findings(environ={**extra, "PIP_NO_INDEX": "0"})) == ["ED502"]
    assert codes(findings(environ={**extra, "PIP_NO_INDEX": "yes"})) == []  # pip uses no index at all


def test_ed504_variable_fix_in_each_shell() -> None:
    """A stale mirror set by a variable: the fix sets the current address in the user's shell;
    PowerShell needs the quotes (a bare URL after = would run as a command)."""
    environ = {"PIP_INDEX_URL": "https://pypi.mirrors.ustc.edu.cn/simple"}
    current = "https://mirrors.ustc.edu.cn/pypi/simple"
    linux = only(findings(environ=environ), "ED504")
    windows = only(findings(environ=environ, platform=WINDOWS), "ED504")
    assert linux.fixes[0].commands == (f"export PIP_INDEX_URL={current}",)
    assert windows.fixes[0].commands == (f"$env:PIP_INDEX_URL = '{current}'",)
