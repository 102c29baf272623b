"""The mirrors probe on recorded Linux, Windows and macOS inputs: pip, conda and uv load orders."""

from __future__ import annotations

import pytest

from envdoctor.host.fake import FakeHost
from envdoctor.model.findings import Interpreter, PlatformInfo
from envdoctor.model.sources import DIRECTORY, LOADED, MALFORMED, MISSING, SKIPPED, UNREADABLE, MirrorFacts
from envdoctor.probes.base import ProbeContext
from envdoctor.probes.mirrors import collect, describe
from envdoctor.target import PythonInfo, Target

WINDOWS = PlatformInfo("Windows", "11", "10.0.22631", "AMD64")
MACOS = PlatformInfo("Darwin", "24.1.0", "Darwin Kernel", "arm64")
VENV = "/home/user/project/.venv"
WIN_VENV = "C:\\Users\\user\\project\\.venv"


def probe(host: FakeHost, prefix: str = VENV, is_conda: bool = False) -> MirrorFacts:
    info = PythonInfo(
        executable=f"{prefix}/bin/python",
        version="3.11.7",
        implementation="CPython",
        bits=64,
        prefix=prefix,
        is_venv=not is_conda,
        is_conda=is_conda,
    )
    target = Target(Interpreter(info.executable, "test"), info)
    # No pip in the examined environment (its version changes how pip reads some files) unless the
    # test scripts one: FakeHost is strict about folders it was not told about.
    windows = host.platform_info.system == "Windows"
    host.absent.add(f"{prefix}\\Lib\\site-packages" if windows else f"{prefix}/lib/python3.11/site-packages")
    return collect(ProbeContext(host=host, target=target))


def effective(facts: MirrorFacts) -> dict[str, tuple[str, str]]:
    return {s.key: (s.value, s.origin) for s in facts.pip.effective}


# ------------------------------------------------------------------------------------------ pip


def test_a_ci_image_pip_configuration() -> None:
    # The shape of a CI image's configuration (`pip config debug`): a global constraint file,
    # find-links and two file:// extra indexes, and PIP_* variables in the environment.
    host = FakeHost(
        files={
            "/etc/xdg/pip/pip.conf": "[global]\nconstraint = /etc/pip-constraints.txt\n",
            "/etc/pip.conf": "[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n",
            "/home/user/.config/pip/pip.conf": "[global]\nfind-links = /srv/wheels\n"
            "extra-index-url = file:///srv/pypi/simple file:///srv/pypi-extra/simple\n",
        },
        environ={"PIP_FIND_LINKS": "/srv/wheels", "PIP_DEFAULT_TIMEOUT": "180", "PIP_VERSION": "x"},
    )
    facts = probe(host)
    assert [(f.level, f.path, f.status) for f in facts.pip.files] == [
        ("global", "/etc/xdg/pip/pip.conf", LOADED),
        ("global", "/etc/pip.conf", LOADED),
        ("user", "/home/user/.pip/pip.conf", MISSING),
        ("user", "/home/user/.config/pip/pip.conf", LOADED),
        ("site", f"{VENV}/pip.conf", MISSING),
    ]
    assert effective(facts) == {
        "cert": ("/etc/ssl/certs/ca-certificates.crt", "/etc/pip.conf"),
        "constraint": ("/etc/pip-constraints.txt", "/etc/xdg/pip/pip.conf"),
        "default-timeout": ("180", "PIP_DEFAULT_TIMEOUT"),
        "extra-index-url": (
            "file:///srv/pypi/simple file:///srv/pypi-extra/simple",
            "/home/user/.config/pip/pip.conf",
        ),
        "find-links": ("/srv/wheels", "PIP_FIND_LINKS"),
    }
    assert describe(facts) == (
        "pip: index PyPI (default); extra-index-url file:///srv/pypi/simple "
        "file:///srv/pypi-extra/simple (~/.config/pip/pip.conf); find-links /srv/wheels "
        "($PIP_FIND_LINKS); constraint /etc/pip-constraints.txt (/etc/xdg/pip/pip.conf) · "
        "conda: not in use · uv: no configuration"
    )


def test_pip_precedence_files_sections_and_variables() -> None:
    host = FakeHost(
        files={
            "/etc/xdg/pip/pip.conf": "[install]\nindex-url = https://install-section.example/simple\n",
            "/home/user/.pip/pip.conf": "[global]\nindex-url = https://legacy.example/simple\n"
            "trusted-host = legacy.example\n",
            "/home/user/.config/pip/pip.conf": "[global]\nindex-url = https://user.example/simple\n"
            "trusted-host =\n",
            f"{VENV}/pip.conf": "[global]\nindex_url = https://site.example/simple\n",
        },
        environ={"PIP_EXTRA_INDEX_URL": "", "PIP_NO_INDEX": "no"},
    )
    facts = probe(host)
    # [install] beats [global] whichever file each is in; an empty value in a later file cancels
    # the same key of the same section; an empty variable is no value at all.
    assert effective(facts)["index-url"] == (
        "https://install-section.example/simple",
        "/etc/xdg/pip/pip.conf",
    )
    assert "trusted-host" not in effective(facts)
    assert "extra-index-url" not in effective(facts)
    assert effective(facts)["no-index"] == ("no", "PIP_NO_INDEX")
    host.environ["PIP_INDEX_URL"] = "https://env.example/simple"
    assert effective(probe(host))["index-url"] == ("https://env.example/simple", "PIP_INDEX_URL")


def test_xdg_directories_on_linux() -> None:
    host = FakeHost(
        environ={"XDG_CONFIG_DIRS": "/opt/xdg1:/opt/xdg2", "XDG_CONFIG_HOME": "/srv/conf"},
        files={"/opt/xdg2/pip/pip.conf": "[global]\nindex-url = https://two.example/simple\n"},
    )
    facts = probe(host)
    assert [f.path for f in facts.pip.files] == [
        "/opt/xdg1/pip/pip.conf",
        "/opt/xdg2/pip/pip.conf",
        "/etc/pip.conf",
        "/home/user/.pip/pip.conf",
        "/srv/conf/pip/pip.conf",
        f"{VENV}/pip.conf",
    ]
    assert effective(facts)["index-url"][1] == "/opt/xdg2/pip/pip.conf"


def test_pip_config_file_replaces_user_files_and_wins_over_site() -> None:
    host = FakeHost(
        environ={"PIP_CONFIG_FILE": "/srv/ci/pip.conf"},
        files={
            "/srv/ci/pip.conf": "[global]\nindex-url = https://ci.example/simple\n",
            "/home/user/.config/pip/pip.conf": "[global]\nfind-links = /home/user/wheels\n",
            f"{VENV}/pip.conf": "[global]\nindex-url = https://site.example/simple\n",
        },
    )
    facts = probe(host)
    statuses = {f.path: (f.status, f.named_by) for f in facts.pip.files}
    assert statuses["/home/user/.config/pip/pip.conf"][0] == SKIPPED
    assert statuses["/srv/ci/pip.conf"] == (LOADED, "PIP_CONFIG_FILE")
    assert effective(facts)["index-url"] == ("https://ci.example/simple", "/srv/ci/pip.conf")
    assert "find-links" not in effective(facts)


def test_pip_config_file_missing_or_devnull() -> None:
    host = FakeHost(
        environ={"PIP_CONFIG_FILE": "/home/user/pip.conf", "PIP_INDEX_URL": "https://env.example/simple"},
        files={"/home/user/.config/pip/pip.conf": "[global]\nfind-links = /home/user/wheels\n"},
    )
    facts = probe(host)
    assert facts.pip.files[-1].status == MISSING and facts.pip.files[-1].named_by == "PIP_CONFIG_FILE"
    assert effective(facts)["find-links"][1] == "/home/user/.config/pip/pip.conf"  # user file still read
    host.environ["PIP_CONFIG_FILE"] = "/dev/null"
    facts = probe(host)
    assert facts.pip.files_disabled
    assert set(effective(facts)) == {"index-url"}  # variables still apply
    assert "config files off" in describe(facts)


def test_unusable_pip_files_are_facts() -> None:
    host = FakeHost(
        files={"/etc/pip.conf": "index-url = https://x.example/simple\n"},
        dirs={"/home/user/.config/pip/pip.conf": ()},
        unreadable={f"{VENV}/pip.conf"},
    )
    facts = probe(host)
    by_path = {f.path: f for f in facts.pip.files}
    assert (by_path["/etc/pip.conf"].status, by_path["/etc/pip.conf"].line) == (MALFORMED, 1)
    assert by_path["/home/user/.config/pip/pip.conf"].status == DIRECTORY
    assert by_path[f"{VENV}/pip.conf"].status == UNREADABLE
    assert "3 file(s) not usable" in describe(facts)


def test_secret_looking_pip_variables_are_not_recorded() -> None:
    facts = probe(FakeHost(environ={"PIP_INDEX_TOKEN": "s3cr3t-value"}))
    (setting,) = facts.pip.settings
    assert setting.value == "****"


def test_windows_pip_files() -> None:
    host = FakeHost(
        platform_info=WINDOWS,
        home_dir="C:\\Users\\user",
        environ={"APPDATA": "C:\\Users\\user\\AppData\\Roaming", "ProgramData": "C:\\ProgramData"},
        files={
            "C:\\Users\\user\\AppData\\Roaming\\pip\\pip.ini": "[global]\n"
            "index-url = https://pypi.tuna.tsinghua.edu.cn/simple\n"
        },
        dirs={f"{WIN_VENV}\\Lib\\site-packages": ("pip-24.0.dist-info", "torch")},
    )
    facts = probe(host, prefix=WIN_VENV)
    assert [(f.level, f.path) for f in facts.pip.files] == [
        ("global", "C:\\ProgramData\\pip\\pip.ini"),
        ("user", "C:\\Users\\user\\pip\\pip.ini"),
        ("user", "C:\\Users\\user\\AppData\\Roaming\\pip\\pip.ini"),
        ("site", f"{WIN_VENV}\\pip.ini"),
    ]
    assert facts.pip.pip_version == "24.0"
    assert effective(facts)["index-url"][0] == "https://pypi.tuna.tsinghua.edu.cn/simple"
    host.environ["PIP_CONFIG_FILE"] = "nul"  # os.devnull on Windows
    assert probe(host, prefix=WIN_VENV).pip.files_disabled


def test_macos_pip_files_before_and_after_pip_26_2() -> None:
    lib = f"{VENV}/lib/python3.11/site-packages"
    host = FakeHost(
        platform_info=MACOS,
        home_dir="/Users/user",
        environ={"XDG_DATA_DIRS": "/opt/share", "XDG_DATA_HOME": "/Users/user/data"},
        dirs={lib: ("pip-24.0.dist-info",), "/Users/user/Library/Application Support/pip": ()},
    )
    old = [f.path for f in probe(host).pip.files]
    assert old == [
        "/Library/Application Support/pip/pip.conf",
        "/Users/user/.pip/pip.conf",
        "/Users/user/Library/Application Support/pip/pip.conf",
        f"{VENV}/pip.conf",
    ]
    host.dirs[lib] = ("pip-26.2.dist-info",)
    host.dirs["/Users/user/data/pip"] = ()
    new = [f.path for f in probe(host).pip.files]
    assert new == [
        "/opt/share/pip/pip.conf",
        "/Users/user/.pip/pip.conf",
        "/Users/user/data/pip/pip.conf",
        f"{VENV}/pip.conf",
    ]
    del host.dirs["/Users/user/Library/Application Support/pip"]
    del host.dirs["/Users/user/data/pip"]
    host.dirs[lib] = ()
    assert probe(host).pip.files[2].path == "/Users/user/.config/pip/pip.conf"


# ---------------------------------------------------------------------------------------- conda


def test_conda_search_path_merge_and_variables() -> None:
    host = FakeHost(
        environ={
            "CONDA_EXE": "/opt/miniconda3/bin/conda",
            "CONDA_PREFIX": "/opt/miniconda3/envs/ml",
            "CONDARC": "/srv/team.condarc",
            "CONDA_CHANNEL_PRIORITY": "flexible",
        },
        files={
            "/opt/miniconda3/.condarc": "channels: [defaults]\nchannel_priority: strict\n",
            "/home/user/.condarc": "channels:\n  - pytorch\n  - defaults\ncustom_channels:\n"
            "  pytorch: https://mirrors.tuna.tsinghua.edu.cn/anaconda/cloud\n",
            "/opt/miniconda3/envs/ml/condarc.d/10-mirror.yml": "custom_channels:\n"
            "  pytorch: https://mirror.sjtu.edu.cn/anaconda/cloud\n",
            "/srv/team.condarc": "channels: [nvidia]\nchannel_alias: https://conda.example.com\n",
        },
        dirs={"/opt/miniconda3/envs/ml/condarc.d": ("10-mirror.yml", "README.txt")},
    )
    facts = probe(host, prefix="/opt/miniconda3/envs/ml", is_conda=True)
    conda = facts.conda
    assert [f.path for f in conda.files] == [
        "/opt/miniconda3/.condarc",
        "/home/user/.condarc",
        "/opt/miniconda3/envs/ml/condarc.d/10-mirror.yml",
        "/srv/team.condarc",
    ]
    assert conda.in_use
    # Lists: later sources first, duplicates dropped; scalars and mapping keys: later wins.
    assert [c for c, _ in conda.merged_list("channels")] == ["nvidia", "pytorch", "defaults"]
    assert [(n, u) for n, u, _ in conda.custom_channels()] == [
        ("pytorch", "https://mirror.sjtu.edu.cn/anaconda/cloud")
    ]
    priority = conda.last("channel_priority")
    assert priority is not None and (priority.value, priority.origin) == (
        "flexible",
        "CONDA_CHANNEL_PRIORITY",
    )
    assert "conda: channels nvidia, pytorch, defaults; channel_alias https://conda.example.com" in describe(
        facts
    )


def test_conda_channels_variable_and_windows_path() -> None:
    host = FakeHost(
        platform_info=WINDOWS,
        home_dir="C:\\Users\\user",
        environ={"CONDA_CHANNELS": "pytorch, conda-forge"},
        files={"C:\\ProgramData\\conda\\.condarc": "channels:\n  - defaults\n"},
    )
    conda = probe(host, prefix=WIN_VENV).conda
    assert [f.path for f in conda.files] == ["C:\\ProgramData\\conda\\.condarc"]
    assert [c for c, _ in conda.merged_list("channels")] == ["pytorch", "conda-forge", "defaults"]


def test_bad_condarc_files() -> None:
    host = FakeHost(
        environ={"CONDARC": "/home/user/missing.condarc"},
        files={
            "/home/user/.condarc": "channels:\n  - defaults\n- pytorch\n",
            "/etc/conda/.condarc": "channels: defaults\n",
        },
        unreadable={"/home/user/.conda/.condarc"},
    )
    conda = probe(host).conda
    by_path = {f.path: f for f in conda.files}
    assert (by_path["/home/user/.condarc"].status, by_path["/home/user/.condarc"].line) == (MALFORMED, 3)
    assert by_path["/etc/conda/.condarc"].error == "channels must be a list of channel names or URLs"
    assert by_path["/home/user/.conda/.condarc"].status == UNREADABLE
    missing = by_path["/home/user/missing.condarc"]
    assert (missing.status, missing.named_by) == (MISSING, "CONDARC")
    assert conda.settings == ()


def test_no_conda() -> None:
    conda = probe(FakeHost()).conda
    assert not conda.in_use and conda.files == ()


# ------------------------------------------------------------------------------------------- uv

PYPROJECT_UV = """\
[project]
name = "demo"

[tool.uv]
index-strategy = "unsafe-best-match"

[[tool.uv.index]]
name = "pytorch-cu126"
url = "https://download.pytorch.org/whl/cu126"
explicit = true

[[tool.uv.index]]
url = "https://mirrors.aliyun.com/pypi/simple"
default = true

[tool.uv.pip]
index-url = "https://mirrors.nju.edu.cn/pytorch/whl/cu126"
"""


def test_uv_project_is_the_nearest_with_tool_uv() -> None:
    host = FakeHost(
        working_dir="/home/user/project/src",
        files={
            "/home/user/project/src/pyproject.toml": "[project]\nname = 'inner'\n",  # no [tool.uv]
            "/home/user/project/pyproject.toml": PYPROJECT_UV,
            "/home/user/pyproject.toml": "[tool.uv]\nindex-url = 'https://never.example/simple'\n",
            "/home/user/.config/uv/uv.toml": "extra-index-url = ['https://user.example/simple']\n",
        },
    )
    uv = probe(host).uv
    assert [(f.level, f.path, f.status) for f in uv.files] == [
        ("project", "/home/user/project/pyproject.toml", LOADED),
        ("user", "/home/user/.config/uv/uv.toml", LOADED),
    ]
    assert [(i.url, i.via, i.name, i.default, i.explicit) for i in uv.indexes] == [
        ("https://download.pytorch.org/whl/cu126", "index", "pytorch-cu126", False, True),
        ("https://mirrors.aliyun.com/pypi/simple", "index", None, True, False),
        ("https://mirrors.nju.edu.cn/pytorch/whl/cu126", "pip.index-url", None, False, False),
        ("https://user.example/simple", "extra-index-url", None, False, False),
    ]
    assert uv.indexes[0].line == 9
    assert [(s.key, s.value) for s in uv.settings] == [("index-strategy", "unsafe-best-match")]


def test_uv_toml_wins_and_bad_files() -> None:
    host = FakeHost(
        working_dir="/home/user/project",
        files={
            "/home/user/project/uv.toml": "index-url = 'https://x.example/simple'\n",
            "/home/user/project/pyproject.toml": PYPROJECT_UV,
        },
    )
    uv = probe(host).uv
    assert [f.path for f in uv.files] == ["/home/user/project/uv.toml"]
    assert [i.url for i in uv.indexes] == ["https://x.example/simple"]
    # A pyproject.toml uv cannot parse is skipped with a warning and the search goes on upwards.
    host.files = {
        "/home/user/project/pyproject.toml": "[tool.uv\n",
        "/home/user/uv.toml": "index-url = 1\n",
    }
    uv = probe(host).uv
    assert [(f.path, f.status, f.line) for f in uv.files] == [
        ("/home/user/project/pyproject.toml", MALFORMED, 1),
        ("/home/user/uv.toml", MALFORMED, 1),
    ]
    assert uv.files[1].error == "index-url must be a string"


@pytest.mark.parametrize(
    ("text", "line", "said"),
    [
        (
            "index-url = 'https://x.example/simple'\nindex-urls = ['https://y.example']\n",
            2,
            "unknown field `index-urls`",
        ),
        ("[sources]\ntorch = { index = 'pytorch' }\n", 1, "belongs in pyproject.toml's [tool.uv]"),
        ("index-strategy = 'unsafe-any-match'\n", 1, "expected one of first-index"),
    ],
    ids=["unknown-field", "sources-in-uv-toml", "unknown-variant"],
)
def test_a_uv_toml_uv_itself_refuses_is_malformed_not_loaded(text: str, line: int, said: str) -> None:
    """uv denies unknown fields (astral-sh/uv#9049, #3819, #12753): its commands fail on such a file."""
    host = FakeHost(working_dir="/home/user/project", files={"/home/user/project/uv.toml": text})
    uv = probe(host).uv
    (found,) = uv.files
    assert (found.status, found.line) == (MALFORMED, line) and said in (found.error or "")
    assert uv.indexes == ()  # nothing of a refused file is used


def test_a_pyproject_with_a_field_uv_does_not_know_is_skipped_as_uv_skips_it() -> None:
    text = "[tool.uv]\nindex-url = 'https://x.example/simple'\nnot-a-uv-setting = true\n"
    host = FakeHost(working_dir="/home/user/project", files={"/home/user/project/pyproject.toml": text})
    (found,) = probe(host).uv.files
    assert found.status == MALFORMED and "`not-a-uv-setting`" in (found.error or "") and found.line == 3


def test_uv_variables_and_switches() -> None:
    host = FakeHost(
        environ={
            "UV_INDEX": "internal=https://pkgs.example.com/simple https://second.example/simple",
            "UV_DEFAULT_INDEX": "https://pypi.tuna.tsinghua.edu.cn/simple",
            "UV_FIND_LINKS": "https://a.example/links,/srv/wheels",
            "UV_TORCH_BACKEND": "cu126",
            "UV_CONFIG_FILE": "/srv/uv.toml",
        },
    )
    uv = probe(host).uv
    assert [(i.url, i.name, i.via, i.default) for i in uv.indexes] == [
        ("https://pkgs.example.com/simple", "internal", "index", False),
        ("https://second.example/simple", None, "index", False),
        ("https://pypi.tuna.tsinghua.edu.cn/simple", None, "default-index", True),
        ("https://a.example/links", None, "find-links", False),
        ("/srv/wheels", None, "find-links", False),
    ]
    assert [(f.path, f.status, f.named_by) for f in uv.files] == [("/srv/uv.toml", MISSING, "UV_CONFIG_FILE")]
    assert [(s.key, s.value, s.origin) for s in uv.settings] == [
        ("torch-backend", "cu126", "UV_TORCH_BACKEND")
    ]
    host.environ["UV_NO_CONFIG"] = "1"
    uv = probe(host).uv
    assert uv.files_disabled and uv.files == () and len(uv.indexes) == 5


def test_windows_uv_files() -> None:
    host = FakeHost(
        platform_info=WINDOWS,
        home_dir="C:\\Users\\user",
        working_dir="C:\\Users\\user\\project",
        environ={"APPDATA": "C:\\Users\\user\\AppData\\Roaming", "SYSTEMDRIVE": "C:"},
        files={
            "C:\\Users\\user\\AppData\\Roaming\\uv\\uv.toml": "index-url = 'https://user.example/simple'\n",
            "C:\\ProgramData\\uv\\uv.toml": "index-url = 'https://system.example/simple'\n",
        },
    )
    uv = probe(host, prefix=WIN_VENV).uv
    assert [(f.level, f.path) for f in uv.files] == [
        ("user", "C:\\Users\\user\\AppData\\Roaming\\uv\\uv.toml"),
        ("system", "C:\\ProgramData\\uv\\uv.toml"),
    ]
