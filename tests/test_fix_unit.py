"""`envdoctor fix`'s pure parts and its runner against a scripted host (the pip commands and the
package listing are the outside world here; selection, changes, restore and the flow are real)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from envdoctor.fix import changes
from envdoctor.fix.restore import restore_plan
from envdoctor.fix.runner import FIXED, INTERRUPTED, NOT_FIXED, USAGE, FixRequest, FixRun, usage_error, worse
from envdoctor.fix.selection import runs_in, select
from envdoctor.fix.state import EnvState, Installed, state_from_records
from envdoctor.host.base import ChildOutcome, CommandResult
from envdoctor.host.fake import FakeHost
from envdoctor.model.findings import Finding, Fix, FixKind, Interpreter, PlatformInfo, Report, Severity
from envdoctor.shell import join, split

PY = "/env/bin/python"
PIP = (PY, "-m", "pip")
INSTALL_TORCH = (
    *PIP,
    "install",
    "torch==2.13.0+cpu",
    "torchvision==0.28.0+cpu",
    "--index-url",
    "file:///idx",
)


def finding(code: str, *fixes: Fix, severity: Severity = Severity.ERROR) -> Finding:
    return Finding(code, code.lower(), severity, f"title {code}", "detail", "torch", fixes=fixes)


def report(*findings: Finding) -> Report:
    return Report(
        "0",
        Interpreter(PY, "given with --python"),
        PlatformInfo("Linux", "6", "#1", "x86_64"),
        (),
        tuple(findings),
    )


def install_fix(*argvs: Sequence[str]) -> Fix:
    return Fix("Install torch", tuple(join(a, "linux") for a in argvs), kind=FixKind.INSTALL)


DRIVER = Fix("Install the driver", ("sudo ubuntu-drivers install", "sudo reboot"))


# --- selection ---------------------------------------------------------------------------------


def test_only_install_fixes_for_the_examined_interpreter_run() -> None:
    other = install_fix(("/other/python", "-m", "pip", "install", "torch"))
    unmarked = Fix("Same, unmarked", (join(INSTALL_TORCH, "linux"),))
    chosen = select(
        report(
            finding("ED001", other, install_fix(INSTALL_TORCH)),
            finding("ED101", DRIVER, unmarked),
            finding("ED009", install_fix(INSTALL_TORCH), severity=Severity.INFO),
        )
    )
    assert [s.codes for s in chosen.steps] == [("ED001",)]
    assert chosen.steps[0].argvs == (INSTALL_TORCH,)
    assert [m.code for m in chosen.manual] == ["ED101"]


def test_the_same_commands_from_two_findings_run_once() -> None:
    same = install_fix(INSTALL_TORCH)
    chosen = select(report(finding("ED001", same), finding("ED002", same)))
    assert [s.codes for s in chosen.steps] == [("ED001", "ED002")]


def test_pip_and_uv_commands_are_recognised_by_their_interpreter() -> None:
    assert runs_in(INSTALL_TORCH, PY)
    assert runs_in(("uv", "pip", "install", "--python", PY, "torch"), PY)
    assert not runs_in(("uv", "pip", "install", "torch"), PY)
    assert not runs_in((*PIP, "config", "set", "global.index-url", "x"), PY)
    assert not runs_in(("sudo", "apt", "install", "x"), PY)


@pytest.mark.parametrize("os_name", ["linux", "windows"])
def test_split_inverts_join(os_name: str) -> None:
    argv = ("C:\\Program Files\\Py\\python.exe" if os_name == "windows" else "/a b/python", "-m", "pip",
            "install", "torch==2.13.0+cpu", 'name @ file:///x y.whl')  # fmt: skip
    assert split(join(argv, os_name), os_name) == argv


# --- package changes ---------------------------------------------------------------------------


def state(*dists: tuple[str, str]) -> EnvState:
    return EnvState(PY, tuple(Installed(n, v, "pip") for n, v in dists))


def test_planned_changes_compare_pins_with_what_is_installed() -> None:
    before = state(("torch", "2.12.0+cu126"), ("torchvision", "0.28.0+cpu"), ("torchaudio", "2.12.0"))
    argvs = [(*PIP, "uninstall", "-y", "torchaudio"), INSTALL_TORCH, (*PIP, "install", "--upgrade", "numpy")]
    words = [c.words for c in changes.planned(before, argvs)]
    assert words == [
        "remove torchaudio 2.12.0",
        "upgrade torch 2.12.0+cu126 -> 2.13.0+cpu",
        f"add numpy {changes.CHOSEN}",
    ]  # torchvision is already as pinned: pip leaves it


def test_planned_changes_name_downgrades_replacements_and_reinstalls() -> None:
    before = state(("torch", "2.13.0+cu126"), ("torchvision", "0.29.0"), ("torchaudio", "2.13.0"))
    argvs = [
        (*PIP, "install", "torch==2.13.0+cpu", "torchvision===0.28.0"),
        (*PIP, "install", "--force-reinstall", "--no-deps", "torchaudio==2.13.0"),
    ]
    assert [c.words for c in changes.planned(before, argvs)] == [
        "replace torch 2.13.0+cu126 -> 2.13.0+cpu",
        "downgrade torchvision 0.29.0 -> 0.28.0",
        "reinstall torchaudio 2.13.0",
    ]


def test_a_fresh_environment_gets_additions() -> None:
    assert [c.words for c in changes.planned(state(), [INSTALL_TORCH])] == [
        "add torch 2.13.0+cpu",
        "add torchvision 0.28.0+cpu",
    ]


def test_diff_lists_added_removed_and_changed() -> None:
    before = state(("torch", "2.12.0"), ("numpy", "2.0"))
    after = state(("torch", "2.13.0"), ("sympy", "1.14"))
    assert [c.words for c in changes.diff(before, after)] == [
        "remove numpy 2.0",
        "add sympy 1.14",
        "upgrade torch 2.12.0 -> 2.13.0",
    ]


# --- restore -----------------------------------------------------------------------------------


def test_restore_uninstalls_additions_and_reinstalls_recorded_versions_from_their_source() -> None:
    recorded = EnvState(
        PY,
        (
            Installed("numpy", "2.0", "pip"),
            Installed(
                "torch", "2.12.0+cpu", "pip", url="file:///w/torch-2.12.0+cpu-cp311-cp311-linux_x86_64.whl"
            ),
            Installed("mine", "0.1", "pip", url="file:///src/mine", editable=True),
        ),
    )
    now = EnvState(
        PY, (Installed("numpy", "2.0", "pip"), Installed("torch", "2.13.0", "pip"), Installed("sympy", "1"))
    )
    plan = restore_plan(recorded, now, PIP)
    assert plan.commands == (
        (*PIP, "uninstall", "-y", "sympy"),
        (*PIP, "install", "--no-deps", "torch @ file:///w/torch-2.12.0+cpu-cp311-cp311-linux_x86_64.whl"),
    )
    assert len(plan.cannot) == 1 and "mine" in plan.cannot[0] and "editable" in plan.cannot[0]
    assert not restore_plan(recorded, recorded, PIP).needed


def test_state_records_need_the_childs_last_line() -> None:
    rows = [{"record": "dist", "name": "Torch", "version": "2.13.0", "installer": "pip\n", "url": None}]
    with pytest.raises(Exception, match="did not finish"):
        state_from_records(PY, rows)
    got = state_from_records(PY, [*rows, {"record": "done"}])
    assert got.get("torch") == Installed("Torch", "2.13.0", "pip\n")
    assert [d.name for d in got.family] == ["Torch"]


# --- confirmation, exit codes, worse -----------------------------------------------------------


def test_without_a_terminal_only_yes_or_dry_run_may_go_on() -> None:
    assert usage_error(FixRequest()) is not None
    assert usage_error(FixRequest(yes=True)) is None
    assert usage_error(FixRequest(dry_run=True)) is None
    assert usage_error(FixRequest(interactive=True)) is None


def test_worse_means_a_higher_verdict_or_a_new_error() -> None:
    warn = report(finding("ED300", severity=Severity.WARNING))
    err = report(finding("ED001"))
    assert worse(warn, err) is not None
    assert worse(err, report(finding("ED002"))) == "new errors: ED002"
    assert worse(err, report()) is None
    assert worse(err, err) is None


# --- the runner against a scripted environment -------------------------------------------------


class Scripted:
    """The examined environment: its packages change as the scripted pip commands run."""

    def __init__(self, dists: dict[str, str], effects: dict[tuple[str, ...], dict[str, str | None]]) -> None:
        self.dists = dict(dists)
        self.effects = effects
        self.host = FakeHost(children={"installed_state.py": self.listing}, on_stream=self.ran)

    def listing(self, interpreter: str, args: Sequence[str], timeout: float) -> ChildOutcome:
        rows: list[dict[str, Any]] = [
            {"record": "dist", "name": n, "version": v, "installer": "pip"} for n, v in self.dists.items()
        ]
        return ChildOutcome(records=(*rows, {"record": "done"}), returncode=0)

    def ran(self, argv: tuple[str, ...]) -> None:
        for name, version in self.effects.get(argv, {}).items():
            if version is None:
                self.dists.pop(name, None)
            else:
                self.dists[name] = version

    def ok(self, argv: tuple[str, ...], effect: dict[str, str | None], code: int = 0) -> None:
        self.effects[argv] = effect
        self.host.commands[argv] = CommandResult(code, stdout=f"pip says {code}\n")

    @property
    def streamed(self) -> list[tuple[str, ...]]:
        return [c for c in self.host.calls if c and c[0] == PY and c[1:3] == ("-m", "pip")]


class Out:
    def __init__(self, answer: bool = True) -> None:
        self.text = ""
        self.answer = answer
        self.asked = 0

    def say(self, text: str) -> None:
        self.text += text

    def confirm(self, question: str) -> bool:
        self.asked += 1
        return self.answer


BROKEN = report(finding("ED001", DRIVER, install_fix(INSTALL_TORCH)), finding("ED101", DRIVER))
HEALTHY = report()


def run(
    env: Scripted, reports: list[Report], tmp_path: Path, out: Out | None = None, **request: Any
) -> tuple[int, Out]:
    out = out or Out()
    checks = iter(reports)
    settings = FixRequest(state_dir=str(tmp_path / "st"), **request)
    return FixRun(env.host, lambda: next(checks), settings, out, "T1")(), out


def test_a_fix_runs_records_first_and_checks_again(tmp_path: Path) -> None:
    env = Scripted({"numpy": "2.0"}, {})
    env.ok(INSTALL_TORCH, {"torch": "2.13.0+cpu", "torchvision": "0.28.0+cpu"})
    code, out = run(env, [BROKEN, HEALTHY], tmp_path, yes=True)
    assert code == FIXED
    assert env.streamed == [INSTALL_TORCH]
    saved = json.loads((tmp_path / "st" / "state-T1.json").read_text())
    assert saved["python"] == PY and saved["family"] == [] and saved["all"][0]["name"] == "numpy"
    assert "add torch 2.13.0+cpu" in out.text and "pip says 0" in out.text
    assert "Before: error (ED001, ED101)\nAfter:  ok" in out.text
    assert "sudo ubuntu-drivers install" in out.text  # shown, never run
    assert ("sudo", "ubuntu-drivers", "install") not in env.host.calls


def test_dry_run_prints_only_and_changes_nothing(tmp_path: Path) -> None:
    env = Scripted({}, {})
    env.ok(INSTALL_TORCH, {"torch": "2.13.0+cpu"})
    code, out = run(env, [BROKEN], tmp_path, dry_run=True)
    assert code == NOT_FIXED
    assert env.streamed == [] and env.dists == {}
    assert not (tmp_path / "st").exists()
    assert join(INSTALL_TORCH, "linux") in out.text and "Dry run: nothing was changed" in out.text


def test_no_terminal_without_yes_is_bad_usage_before_any_check(tmp_path: Path) -> None:
    env = Scripted({}, {})
    code, out = run(env, [], tmp_path)  # no report: a check would raise StopIteration
    assert code == USAGE and "--yes" in out.text


def test_a_declined_confirmation_changes_nothing(tmp_path: Path) -> None:
    env = Scripted({}, {})
    code, out = run(env, [BROKEN], tmp_path, out=Out(answer=False), interactive=True)
    assert (code, out.asked, env.streamed) == (NOT_FIXED, 1, [])


def test_a_failing_step_restores_the_recorded_state(tmp_path: Path) -> None:
    env = Scripted({"torch": "2.12.0+cpu", "numpy": "2.0"}, {})
    env.ok(INSTALL_TORCH, {"torch": None, "torchvision": "0.28.0+cpu", "sympy": "1"}, code=1)  # half done
    restore_add = (*PIP, "uninstall", "-y", "sympy", "torchvision")
    restore_pin = (*PIP, "install", "--no-deps", "torch==2.12.0+cpu")
    env.ok(restore_add, {"sympy": None, "torchvision": None})
    env.ok(restore_pin, {"torch": "2.12.0+cpu"})
    code, out = run(env, [BROKEN], tmp_path, yes=True)
    assert code == NOT_FIXED
    assert env.streamed == [INSTALL_TORCH, restore_add, restore_pin]
    assert env.dists == {"torch": "2.12.0+cpu", "numpy": "2.0"}
    assert "exit status 1" in out.text and "Restored: the packages are as recorded" in out.text


def test_a_worse_check_after_restores(tmp_path: Path) -> None:
    env = Scripted({}, {})
    env.ok(INSTALL_TORCH, {"torch": "2.13.0+cpu"})
    env.ok((*PIP, "uninstall", "-y", "torch"), {"torch": None})
    code, out = run(env, [BROKEN, report(finding("ED001"), finding("ED004"))], tmp_path, yes=True)
    assert code == NOT_FIXED and env.dists == {}
    assert "the check after is worse: new errors: ED004" in out.text


def test_a_restore_that_fails_says_the_state_and_the_commands(tmp_path: Path) -> None:
    env = Scripted({"torch": "2.12.0"}, {})
    env.ok(INSTALL_TORCH, {"torch": "2.13.0+cpu"}, code=1)
    env.ok((*PIP, "install", "--no-deps", "torch==2.12.0"), {}, code=1)  # the old release is gone
    code, out = run(env, [BROKEN], tmp_path, yes=True)
    assert code == NOT_FIXED
    assert "upgrade torch 2.12.0 -> 2.13.0+cpu" in out.text
    assert "restore did not complete" in out.text
    assert f"  {PY} -m pip install --no-deps torch==2.12.0\n" in out.text


def test_ctrl_c_mid_way_reports_the_state(tmp_path: Path) -> None:
    env = Scripted({}, {})

    def interrupted(argv: tuple[str, ...]) -> None:
        env.dists["torch"] = "2.13.0+cpu"  # pip had got this far
        raise KeyboardInterrupt

    env.host.on_stream = interrupted
    code, out = run(env, [BROKEN], tmp_path, yes=True)
    assert code == INTERRUPTED
    assert "Interrupted" in out.text and "add torch 2.13.0+cpu" in out.text
    assert f"{PY} -m pip uninstall -y torch" in out.text


def test_nothing_runnable_is_not_fixed_and_says_whose_steps_remain(tmp_path: Path) -> None:
    env = Scripted({}, {})
    code, out = run(env, [report(finding("ED101", DRIVER))], tmp_path, yes=True)
    assert code == NOT_FIXED and "sudo reboot" in out.text and env.streamed == []
    code, out = run(env, [HEALTHY], tmp_path, yes=True)
    assert code == FIXED and "Nothing to fix" in out.text


def test_a_check_that_stays_broken_is_not_fixed_and_keeps_the_changes(tmp_path: Path) -> None:
    env = Scripted({}, {})
    env.ok(INSTALL_TORCH, {"torch": "2.13.0+cpu"})
    code, out = run(env, [BROKEN, report(finding("ED001"))], tmp_path, yes=True)
    assert code == NOT_FIXED and env.dists == {"torch": "2.13.0+cpu"}
    assert "Not fixed: ED001 remain" in out.text


# --- the live host's streaming run -------------------------------------------------------------


def test_live_stream_hands_over_each_line_and_the_exit_status() -> None:
    import sys

    from envdoctor.host.live import LiveHost

    lines: list[str] = []
    script = "import sys; print('one', flush=True); print('two', file=sys.stderr, flush=True); sys.exit(3)"
    result = LiveHost().stream([sys.executable, "-c", script], 30, lines.append)
    assert result.returncode == 3 and not result.ok
    assert sorted(lines) == ["one\n", "two\n"] and "one" in result.stdout


@pytest.mark.slow
def test_live_stream_ends_a_program_that_outlives_its_time() -> None:
    import sys
    import time

    from envdoctor.host.live import LiveHost

    started = time.perf_counter()
    result = LiveHost().stream([sys.executable, "-c", "import time; time.sleep(60)"], 1, lambda line: None)
    assert result.timed_out and time.perf_counter() - started < 15
    assert LiveHost().stream(["/no/such/program"], 5, lambda line: None).start_error == "not found"


# --- the command line --------------------------------------------------------------------------


def test_fix_without_a_terminal_or_yes_is_bad_usage(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.cli_support import run_cli

    ran = run_cli(capsys, monkeypatch, "fix", "--python", PY)  # pytest's stdin is no terminal
    assert ran.code == 2 and "add --yes" in ran.err and ran.out == ""
    ran = run_cli(capsys, monkeypatch, "fix", "--yes", "--command-timeout", "1")
    assert ran.code == 2 and "--command-timeout 1" in ran.err


# --- issue 20, item 5: the plan's routes in order -----------------------------------------------

INSTALL_REMOTE = (
    *PIP,
    "install",
    "torch==2.13.0+cpu",
    "--index-url",
    "https://download.pytorch.org/whl/cpu",
)
INSTALL_LOCAL = (*PIP, "install", "torch==2.13.0+cpu")


def _with_reach(base: Report, *silent: str) -> Report:
    from dataclasses import replace

    from envdoctor.model.findings import ProbeResult, ProbeStatus
    from envdoctor.model.sources import ReachCheck, ReachStatus, SourcesFacts

    facts = SourcesFacts(reach=tuple(ReachCheck(url, ReachStatus.UNREACHABLE, "no answer") for url in silent))
    return replace(base, probes=(ProbeResult("sources", ProbeStatus.OK, 0.0, facts),))


def test_a_route_to_a_host_that_did_not_answer_comes_after_one_that_can_work(tmp_path: Path) -> None:
    silent = _with_reach(
        report(finding("ED001", install_fix(INSTALL_REMOTE), install_fix(INSTALL_LOCAL))),
        "https://download.pytorch.org/whl/",
    )
    step = select(silent).steps[0]
    assert step.argvs == (INSTALL_LOCAL,) and step.routes[1].unreachable == ("download.pytorch.org",)
    env = Scripted({}, {})
    env.ok(INSTALL_LOCAL, {"torch": "2.13.0+cpu"})
    code, out = run(env, [silent, HEALTHY], tmp_path, yes=True)
    assert code == FIXED and env.streamed == [INSTALL_LOCAL], out.text
    assert "if that fails (it names download.pytorch.org, which did not answer)" in out.text


def test_a_failed_route_names_the_interpreter_and_the_next_route_runs(tmp_path: Path) -> None:
    two = report(finding("ED001", install_fix(INSTALL_LOCAL), install_fix(INSTALL_REMOTE)))
    env = Scripted({}, {})
    env.ok(INSTALL_LOCAL, {}, code=1)
    env.ok(INSTALL_REMOTE, {"torch": "2.13.0+cpu"})
    code, out = run(env, [two, HEALTHY], tmp_path, yes=True)
    assert code == FIXED, out.text
    assert env.streamed == [INSTALL_LOCAL, INSTALL_REMOTE]
    assert f"exit status 1, run with {PY}; trying the next route: Install torch" in out.text


def test_fix_offline_keeps_pips_build_environments_local(tmp_path: Path) -> None:
    from dataclasses import replace

    from envdoctor.model.findings import ProbeResult, ProbeStatus
    from envdoctor.model.sources import CondaConfig, MirrorFacts, PipConfig, PipSetting, UvConfig

    pip = PipConfig(
        effective=(
            PipSetting("global", "index-url", "https://mirror.example.invalid/simple", "pip.conf"),
            PipSetting("global", "extra-index-url", "file:///opt/pypi/simple", "pip.conf"),
            PipSetting(":env:", "find-links", "/opt/wheels", "PIP_FIND_LINKS"),
        )
    )
    facts = MirrorFacts(pip, CondaConfig(), UvConfig())
    base = replace(BROKEN, probes=(ProbeResult("mirrors", ProbeStatus.OK, 0.0, facts),))
    env = Scripted({}, {})
    env.ok(INSTALL_TORCH, {"torch": "2.13.0+cpu"})
    code, out = run(env, [base, HEALTHY], tmp_path, yes=True, offline=True)
    assert code == FIXED, out.text
    sent = env.host.stream_env[0]
    assert sent["PIP_INDEX_URL"] == "file:///opt/pypi/simple" and sent["PIP_EXTRA_INDEX_URL"] == ""
    assert sent["PIP_FIND_LINKS"] == "/opt/wheels" and "mirror.example.invalid" not in " ".join(sent.values())
    online = Scripted({}, {})
    online.ok(INSTALL_TORCH, {"torch": "2.13.0+cpu"})
    run(online, [base, HEALTHY], tmp_path / "on", yes=True)
    assert online.host.stream_env == [{}]


# --- issue 23: fix's words ------------------------------------------------------------------------


def test_fix_says_it_skips_notes_and_how_to_include_them(tmp_path: Path) -> None:
    note = report(finding("ED211", install_fix((*PIP, "install", "numpy")), severity=Severity.INFO))
    env = Scripted({}, {})
    code, out = run(env, [note], tmp_path, dry_run=True)
    assert code == FIXED and "Nothing to fix" not in out.text
    assert "fix skips notes (info-level findings), and ED211 has one: `envdoctor fix --notes`" in out.text
    env.ok((*PIP, "install", "numpy"), {"numpy": "2.0"})
    code, out = run(env, [note, HEALTHY], tmp_path / "again", yes=True, notes=True)
    assert code == FIXED and env.streamed == [(*PIP, "install", "numpy")], out.text


def test_an_interruption_is_said_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from envdoctor.util import lifecycle

    env = Scripted({}, {})

    def interrupted(argv: tuple[str, ...]) -> None:
        raise KeyboardInterrupt

    env.host.on_stream = interrupted
    env.ok(INSTALL_TORCH, {})
    monkeypatch.setattr(lifecycle, "interruption_said", lambda: True)  # the signal handler said it
    code, out = run(env, [BROKEN], tmp_path, yes=True)
    assert code == INTERRUPTED and "Interrupted." not in out.text
    monkeypatch.setattr(lifecycle, "interruption_said", lambda: False)
    code, out = run(env, [BROKEN], tmp_path / "b", yes=True)
    assert code == INTERRUPTED and out.text.count("Interrupted.") == 1
