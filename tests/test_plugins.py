"""Plugins (issue 21 §1): third-party rules and probes through entry points.

The loader is tested through its seam (the entry points as importlib.metadata lists them); then the
plugin package in tests/plugins is installed into a scratch venv, with docs/plugins.md's example as
its rules module, and envdoctor is run there as a user runs it."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from envdoctor.engine import diagnose
from envdoctor.model.findings import Interpreter, PlatformInfo, Severity
from envdoctor.plugin import Hit, RuleDoc, rule
from envdoctor.plugin.loader import PROBES_GROUP, RULES_GROUP, EntryPoint, PluginError, load
from envdoctor.probes.base import ProbeSpec

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "tests" / "plugins" / "acme-envdoctor"
DOC = ROOT / "docs" / "plugins.md"
DOC_BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def _rule(code: str) -> object:
    @rule(
        code=code,
        name=f"rule-{code.lower()}",
        severity=Severity.WARNING,
        summary="a test rule",
        needs=(),
        doc=RuleDoc("w", "y", "f", "e"),
    )
    def check(ctx: object) -> Iterator[Hit]:
        yield Hit(title=f"{code} fired", detail="always")

    return check


def _point(package: str, loaded: object, group: str = RULES_GROUP, name: str = "main") -> EntryPoint:
    def give() -> object:
        if isinstance(loaded, BaseException):
            raise loaded
        return loaded

    return EntryPoint(group, name, f"{package.replace('-', '_')}.rules", package, "1.0", give)


def _load(*points: EntryPoint) -> object:
    return load(points, ("ED101", "ED203"), ("torch", "nvml"))


# --- the loader ----------------------------------------------------------------------------------


def test_a_module_gives_the_rules_it_defines_marked_with_their_package() -> None:
    module = types.ModuleType("acme_rules")
    module.first, module.second, module.other = _rule("ACME002"), _rule("ACME001"), "not a rule"  # type: ignore[attr-defined]
    loaded = _load(_point("acme-envdoctor", module))
    assert [r.code for r in loaded.rules] == ["ACME001", "ACME002"]  # type: ignore[attr-defined]
    assert {r.origin for r in loaded.rules} == {"acme-envdoctor"}  # type: ignore[attr-defined]
    (info,) = loaded.plugins  # type: ignore[attr-defined]
    assert (info.package, info.rules, info.error) == ("acme-envdoctor", ("ACME001", "ACME002"), None)


def plugin_codes() -> set[str]:
    """The codes a report of one working and one failing plugin holds (for tests/test_registry.py)."""
    from envdoctor.rules import RULES

    loaded = _load(_point("good", [_rule("GOOD001")]), _point("bad", ModuleNotFoundError("gone")))
    report = diagnose(
        PlatformInfo("Linux", "6.8", "1", "x86_64"),
        Interpreter("/env/bin/python", "r"),
        (),
        rules=(*RULES, *loaded.rules),  # type: ignore[attr-defined]
        plugins=loaded.plugins,  # type: ignore[attr-defined]
    )
    return {f.code for f in report.findings if f.code.startswith("ED")}


def test_a_plugin_that_fails_to_import_is_a_finding_and_the_rest_still_runs() -> None:
    loaded = _load(
        _point("good", [_rule("GOOD001")]), _point("bad", ModuleNotFoundError("No module named 'gone'"))
    )
    from envdoctor.rules import RULES

    full = diagnose(
        PlatformInfo("Linux", "6.8", "1", "x86_64"),
        Interpreter("/env/bin/python", "r"),
        (),
        rules=(*RULES, *loaded.rules),  # type: ignore[attr-defined]
        plugins=loaded.plugins,  # type: ignore[attr-defined]
    )
    (failed,) = [f for f in full.findings if f.code == "ED902"]
    assert "bad 1.0" in failed.title and "No module named 'gone'" in failed.detail
    assert "GOOD001" in [f.code for f in full.findings] and full.plugins == loaded.plugins  # type: ignore[attr-defined]


def test_a_plugin_rule_that_raises_names_its_plugin() -> None:
    @rule(
        code="ACME009",
        name="boom",
        severity=Severity.ERROR,
        summary="s",
        needs=(),
        doc=RuleDoc("w", "y", "f", "e"),
    )
    def boom(ctx: object) -> Iterator[Hit]:
        raise RuntimeError("a bug in the plugin")
        yield  # pragma: no cover

    loaded = _load(_point("acme-envdoctor", boom))
    report = diagnose(
        PlatformInfo("Linux", "6.8", "1", "x86_64"),
        Interpreter("/p", "r"),
        (),
        rules=loaded.rules,  # type: ignore[attr-defined]
    )
    (finding,) = report.findings
    assert finding.severity is Severity.WARNING and "a rule of the plugin acme-envdoctor" in finding.title
    assert "a bug in the plugin" in finding.detail


@pytest.mark.parametrize(
    ("points", "said"),
    [
        ([_point("acme", [_rule("ED999")])], "plugin rule 'ED999' from acme: plugin codes are a namespace"),
        ([_point("acme", [_rule("acme1")])], "plugin rule 'acme1' from acme"),
        (
            [_point("acme", [_rule("ACME001")]), _point("acme-fork", [_rule("ACME001")])],
            "plugin rule ACME001: acme-fork and acme both declare it",
        ),
        (
            [_point("acme", ProbeSpec("torch", "T", object, lambda c: object(), str), group=PROBES_GROUP)],
            "plugin probe 'torch': acme and envdoctor both name a probe so",
        ),
    ],
    ids=["ed-prefix", "not-a-code", "two-packages-one-code", "probe-named-like-envdoctors"],
)
def test_clashes_are_one_clear_error_naming_both_packages(points: list[EntryPoint], said: str) -> None:
    with pytest.raises(PluginError) as caught:
        _load(*points)
    assert str(caught.value).startswith(said) and "\n" not in str(caught.value)


def test_an_entry_point_that_gives_nothing_usable_is_noted() -> None:
    loaded = _load(_point("acme", "a string"))
    (info,) = loaded.plugins  # type: ignore[attr-defined]
    assert info.error is not None and "gives no rule" in info.error and not loaded.rules  # type: ignore[attr-defined]


# --- a real plugin package in a scratch venv -----------------------------------------------------


def _documented_module() -> str:
    (module,) = DOC_BLOCK.findall(DOC.read_text(encoding="utf-8"))
    return str(module)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv that sees this environment's packages (envdoctor, torch) and has the plugin installed."""
    root = tmp_path_factory.mktemp("plugin")
    package = root / "acme-envdoctor"
    shutil.copytree(PLUGIN, package)
    (package / "acme_envdoctor" / "rules.py").write_text(_documented_module(), encoding="utf-8")
    venv = root / "venv"
    # No pip or setuptools of its own: this environment's (newer) ones build and install the plugin.
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=180)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True, timeout=60,
    ).stdout.strip()  # fmt: skip
    # This environment's site folder, processed as a site folder (its .pth files: the editable
    # envdoctor), after the scratch venv's own.
    ours = sysconfig.get_paths()["purelib"]
    Path(purelib, "zz-outer.pth").write_text(f"import site; site.addsitedir({ours!r})\n", encoding="utf-8")
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
         str(package)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return python


def _envdoctor(python: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "ENVDOCTOR_NO_PLUGINS")}
    environ.update(env, ENVDOCTOR_OFFLINE="1", COLUMNS="200")
    return subprocess.run(
        [str(python), "-m", "envdoctor", *args], env=environ, capture_output=True, text=True, timeout=300,
        check=False,
    )  # fmt: skip


def test_the_plugins_rules_are_listed_with_their_package_and_explained(scratch: Path) -> None:
    listed = _envdoctor(scratch, "rules")
    assert listed.returncode == 0, listed.stderr
    line = next(row for row in listed.stdout.splitlines() if row.startswith("ACME001"))
    assert "ACME's data loaders need NumPy beside torch [acme-needs-numpy] (plugin acme-envdoctor)" in line
    assert "ACME002" in listed.stdout and "ED101" in listed.stdout
    as_json = json.loads(_envdoctor(scratch, "rules", "--format", "json").stdout)
    assert {"code": "ACME001", "plugin": "acme-envdoctor 0.1.0"}.items() <= next(
        r for r in as_json if r["code"] == "ACME001"
    ).items()
    told = _envdoctor(scratch, "explain", "acme001")
    assert told.returncode == 0, told.stderr
    assert told.stdout.startswith(
        "ACME001 acme-needs-numpy (error; about: Plugins) [plugin: acme-envdoctor 0.1.0]"
    )
    assert "acme.data converts every batch with torch.from_numpy" in " ".join(told.stdout.split())
    assert "Docs: https://" not in told.stdout  # envdoctor's rules reference does not hold it
    off = _envdoctor(scratch, "rules", ENVDOCTOR_NO_PLUGINS="1")
    assert "ACME001" not in off.stdout


def test_check_runs_the_plugins_contains_the_broken_one_and_lists_them(scratch: Path, tmp_path: Path) -> None:
    done = _envdoctor(scratch, "check", "--no-smoke", "--format", "json", ACME_HOME=str(tmp_path / "gone"))
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr
    data = json.loads(done.stdout)
    codes = {f["code"]: f for f in data["findings"]}
    assert "ACME002" in codes and codes["ACME002"]["area"] == "acme"
    assert codes["ED902"]["title"] == "the plugin acme-envdoctor 0.1.0 could not be loaded"
    assert "removed_in_acme_2" in codes["ED902"]["detail"]
    numpy_here = importlib.util.find_spec("numpy") is not None
    assert ("ACME001" in codes) is not numpy_here  # the documented rule, as written, ran
    if not numpy_here:
        # Offline here, and no local source holds NumPy: the planner says so instead of a command.
        (fix,) = codes["ACME001"]["fixes"]
        assert (
            fix["commands"] == [] and "offline (--offline), and no local source holds numpy" in fix["summary"]
        )
    added = {p["entry_point"].split(" = ")[0]: p for p in data["plugins"]}
    assert added["envdoctor.rules:acme"]["rules"] == ["ACME001"]
    assert added["envdoctor.probes:acme"]["probes"] == ["acme"] and added["envdoctor.rules:broken"]["error"]
    assert data["facts"]["acme"] == {"home": str(tmp_path / "gone"), "home_exists": False}
    from tests.test_schemas import _validator

    _validator("report-1.json").validate(data)  # the plugins list is in the report's schema
    console = _envdoctor(scratch, "check", "--no-smoke", ACME_HOME=str(tmp_path / "gone"))
    assert (
        "plugins: acme-envdoctor 0.1.0 (ACME001, ACME002, probe acme; one entry point failed: see ED902)"
        in (console.stdout)
    )
    assert "ACME stack" in console.stdout


def test_no_plugins_turns_every_plugin_off(scratch: Path) -> None:
    done = _envdoctor(scratch, "check", "--no-smoke", "--no-plugins", "--format", "json", ACME_HOME="/gone")
    data = json.loads(done.stdout)
    assert not [f for f in data["findings"] if f["code"].startswith(("ACME", "ED902"))]
    assert "plugins" not in data and "acme" not in data["facts"]
