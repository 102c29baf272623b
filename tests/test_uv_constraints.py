"""uv's constraints in the plan (issue 10, item 1 for uv): `constraint-dependencies` and
`override-dependencies` in uv.toml or [tool.uv], and the files UV_CONSTRAINT and UV_OVERRIDE name.
A uv command never pins what they reject; the plan names the constraint and its file, takes the
newest build it allows and says how to lift it, as it does for pip's constraint files. Real files in
a temporary project folder, read by the real probes through a LiveHost."""

from __future__ import annotations

from pathlib import Path

import pytest

from envdoctor.host.live import LiveHost
from envdoctor.install.plan import InstallTarget, plan
from envdoctor.install.sources import Sources, describe, from_facts
from envdoctor.probes import sources
from envdoctor.probes.mirrors import collect_uv
from tests.install_support import text


def _sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **env: str) -> tuple[Sources, LiveHost]:
    """The uv Sources the probes read in `tmp_path/project`, with a private HOME and no system file."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    monkeypatch.chdir(tmp_path / "project")
    environ = {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "UV_NO_SYSTEM_CONFIG": "1"}
    host = LiveHost(environ={**environ, **env})
    uv = collect_uv(host, "linux")
    facts = sources.collect_sources(host, "linux", None, offline=False, reach=False, uv=uv)
    return from_facts("uv", None, uv, None, facts), host


def _project(tmp_path: Path, name: str, content: str) -> Path:
    folder = tmp_path / "project"
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(content, encoding="utf-8")
    return path


def _uv_plan(found: Sources, **fields: object) -> object:
    target = InstallTarget(os="linux", python="3.11", manager="uv", sources=found, **fields)  # type: ignore[arg-type]
    return plan(target)


def test_constraint_dependencies_in_pyproject_cap_the_uv_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _project(
        tmp_path,
        "pyproject.toml",
        '[project]\nname = "app"\nversion = "0"\n\n[tool.uv]\nconstraint-dependencies = [\n'
        '    "numpy<3",\n    "torch<2.13",\n]\n',
    )
    found, _ = _sources(tmp_path, monkeypatch)
    assert [(c.text, c.file, c.line, c.label) for c in found.constraints] == [
        ("torch<2.13", str(path), 8, "uv's constraint")
    ]
    result = _uv_plan(found)
    assert result.torch == "2.12.1"  # type: ignore[attr-defined]
    assert all("2.13.0" not in text(c) for c in result.commands)  # type: ignore[attr-defined]
    assert any("torch==2.12.1" in text(c) for c in result.commands)  # type: ignore[attr-defined]
    warning = result.warnings[0]  # type: ignore[attr-defined]
    assert warning == (
        f"uv's constraint torch<2.13 ({path}, line 8) rules out torch 2.13.0; this is torch 2.12.1, the "
        f"newest release in envdoctor's data that it allows. To lift it: remove or relax the entry on line 8 "
        f"of {path} "
        "(constraint-dependencies)"
    )
    assert f"uv's constraint torch<2.13 ({path})" in describe(found)
    # asked for the release it rejects: no command, the constraint named, and how to lift it
    asked = _uv_plan(found, torch="2.13.0")
    assert not asked.possible and "uv's constraint torch<2.13" in asked.reason  # type: ignore[attr-defined]
    assert any(s.startswith("lift uv's constraint torch<2.13: remove or relax") for s in asked.suggestions)  # type: ignore[attr-defined]


def test_uv_constraint_variable_names_files_and_override_in_uv_toml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(tmp_path, "uv.toml", 'override-dependencies = ["torchvision==0.27.0"]\n')
    caps = tmp_path / "caps.txt"
    caps.write_text("# team caps\nnumpy<3\ntorch<=2.13.0,!=2.13.0\n", encoding="utf-8")
    other = tmp_path / "none-on-torch.txt"
    other.write_text("requests<3\n", encoding="utf-8")
    found, _ = _sources(tmp_path, monkeypatch, UV_CONSTRAINT=f"{other} {caps}")
    labels = [(c.label, c.text, c.line) for c in found.constraints]
    assert labels == [
        ("uv's constraint", "torch<=2.13.0,!=2.13.0", 3),
        ("uv's override", "torchvision==0.27.0", 1),
    ]
    result = _uv_plan(found)
    # 2.13.0 is ruled out by the file, 2.12.1 (torchvision 0.27.1) by the override: uv would swap
    # the pin for 0.27.0. 2.12.0 pairs with 0.27.0, so the plan takes it.
    assert (result.torch, result.torchvision) == ("2.12.0", "0.27.0")  # type: ignore[attr-defined]
    assert any("torchvision==0.27.0" in text(c) for c in result.commands)  # type: ignore[attr-defined]
    assert result.warnings[0].startswith(  # type: ignore[attr-defined]
        f"uv's constraint torch<=2.13.0,!=2.13.0 ({caps}, line 3) rules out torch 2.13.0; this is torch "
        f"2.12.0, the newest release in envdoctor's data that it allows. To lift it: unset $UV_CONSTRAINT, "
        f"or remove line 3 of {caps}"
    )


def test_a_pip_plan_ignores_uv_constraints_and_uv_ignores_pip_constraint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(tmp_path, "uv.toml", 'constraint-dependencies = ["torch<2.10"]\n')
    caps = tmp_path / "pip-caps.txt"
    caps.write_text("torch<2.11\n", encoding="utf-8")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.chdir(tmp_path / "project")
    host = LiveHost(environ={"HOME": str(home), "UV_NO_SYSTEM_CONFIG": "1", "PIP_CONSTRAINT": str(caps)})
    from envdoctor.probes.mirrors import collect_pip

    pip = collect_pip(host, "linux", None)
    uv = collect_uv(host, "linux")
    facts = sources.collect_sources(host, "linux", None, offline=False, reach=False, pip=pip, uv=uv)
    as_pip = from_facts("pip", pip, uv, None, facts)
    as_uv = from_facts("uv", pip, uv, None, facts)
    assert [c.text for c in as_pip.constraints] == ["torch<2.11"]
    assert [c.text for c in as_uv.constraints] == ["torch<2.10"]  # uv reads no PIP_CONSTRAINT (uv#10686)
    assert "uv constraints torch<2.10 (constraint-dependencies in" in sources.describe(facts)


def test_an_explicit_local_index_that_torch_is_routed_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """[tool.uv.sources] routes torch to an explicit file:// index holding the exact build: `uv sync`
    takes it from there, but `uv pip install` reads neither explicit indexes nor [tool.uv.sources],
    so the plan does not pretend the command finds it locally, and prints no second routing."""
    wheel = "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
    simple = tmp_path / "simple"
    (simple / "torch").mkdir(parents=True)
    (simple / "torch" / "index.html").write_text(f'<a href="{wheel}">{wheel}</a>\n', encoding="utf-8")
    _project(
        tmp_path,
        "pyproject.toml",
        '[project]\nname = "app"\nversion = "0"\n\n[[tool.uv.index]]\nname = "wheels"\n'
        f'url = "{simple.as_uri()}"\nexplicit = true\n\n[tool.uv.sources]\ntorch = {{ index = "wheels" }}\n',
    )
    found, _ = _sources(tmp_path, monkeypatch)
    assert [w.filename for w in found.wheels] == [wheel]
    result = _uv_plan(found, torch="2.13.0")
    assert result.route.value == "index"  # type: ignore[attr-defined]
    assert "pyproject.toml" not in [c.kind.value for c in result.commands]  # type: ignore[attr-defined]
    assert (
        f"pyproject.toml routes torch to the index 'wheels' ({simple.as_uri()}), which holds {wheel}: "
        "`uv sync` and `uv add` take it from there; `uv pip install` reads no [tool.uv.sources], so its "
        "line names the build's index"
    ) in result.warnings  # type: ignore[attr-defined]
    assert not any("not to the cpu one" in w for w in result.warnings)  # type: ignore[attr-defined]
    assert text(result.commands[0]) == (  # type: ignore[attr-defined]
        "uv pip install torch==2.13.0 torchvision==0.28.0 --index-url https://download.pytorch.org/whl/cpu"
    )
