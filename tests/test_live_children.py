"""The real child scripts in real interpreters: the CPU torch installed here, and fake interpreters
that segfault, hang, exit early or print garbage."""

from __future__ import annotations

import importlib.util
import os
import stat
import sys
import time
from pathlib import Path

import pytest

from envdoctor.host.live import LiveHost, parse_records
from envdoctor.probes import torch_build
from envdoctor.target import resolve_target
from tests.real_torch import DEFAULT_RUN, real_torch_child

pytestmark = pytest.mark.slow

TORCH_PRESENT = importlib.util.find_spec("torch") is not None
posix_only = pytest.mark.skipif(os.name != "posix", reason="fake interpreters are shell scripts")


def _fake_python(tmp_path: Path, body: str) -> str:
    path = tmp_path / "python"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


@pytest.mark.early(DEFAULT_RUN)
def test_real_torch_facts_are_true_of_this_build() -> None:
    """CI installs the CPU build of torch: the probe must report exactly that build."""
    if not TORCH_PRESENT:
        pytest.fail("torch must be installed for the test suite (see the README's test command)")
    import torch

    outcome = real_torch_child(sys.executable)
    facts = torch_build.facts_from_outcome(outcome)
    assert facts.crash is None and facts.imported
    assert facts.version == torch.__version__
    assert facts.cuda == torch.version.cuda and facts.hip == torch.version.hip
    assert facts.cuda_available == torch.cuda.is_available()
    assert facts.arch_list == tuple(torch.cuda.get_arch_list())
    assert facts.variant == ("cpu" if torch.version.cuda is None else facts.variant)
    assert facts.location is not None and Path(facts.location).parent == Path(torch.__file__).parent


def test_real_python_info() -> None:
    target = resolve_target(LiveHost(), sys.executable)
    assert target.info.version == ".".join(str(n) for n in sys.version_info[:3])
    assert target.info.is_venv == (sys.prefix != sys.base_prefix)


def test_torch_missing_in_an_interpreter_without_it(tmp_path: Path) -> None:
    # -S drops site-packages, so torch cannot be found: the child must say "not installed".
    wrapper = _fake_python(tmp_path, f'exec "{sys.executable}" -S "$@"') if os.name == "posix" else None
    if wrapper is None:
        pytest.skip("needs a POSIX shell")
    facts = torch_build.facts_from_outcome(LiveHost().python_json(wrapper, "torch_probe.py", (), 60))
    assert facts.crash is None and not facts.installed


@posix_only
def test_segfaulting_interpreter_becomes_a_crash_fact(tmp_path: Path) -> None:
    python = _fake_python(tmp_path, 'echo \'{"record": "stage", "stage": "import"}\'; kill -SEGV $$')
    facts = torch_build.facts_from_outcome(LiveHost().python_json(python, "torch_probe.py", (), 30))
    assert facts.crash is not None and facts.crash.exit_signal == 11
    assert facts.crash.last_stage == "import" and facts.installed


@posix_only
def test_hanging_interpreter_is_killed_at_the_timeout(tmp_path: Path) -> None:
    python = _fake_python(
        tmp_path, 'echo \'{"record": "stage", "stage": "cuda_available"}\'; sleep 60 & wait'
    )
    started = time.perf_counter()
    outcome = LiveHost().python_json(python, "torch_probe.py", (), 1.0)
    assert time.perf_counter() - started < 10
    facts = torch_build.facts_from_outcome(outcome)
    assert facts.crash is not None and facts.crash.timed_out and facts.crash.last_stage == "cuda_available"


@posix_only
def test_early_exit_and_garbage_output(tmp_path: Path) -> None:
    python = _fake_python(tmp_path, "echo 'not json'; echo '{broken'; echo 'oops' >&2; exit 3")
    outcome = LiveHost().python_json(python, "torch_probe.py", (), 30)
    assert outcome.records == () and outcome.returncode == 3 and "oops" in outcome.stderr_tail
    facts = torch_build.facts_from_outcome(outcome)
    assert facts.crash is not None and facts.crash.exit_code == 3


def test_missing_interpreter_is_a_start_error(tmp_path: Path) -> None:
    outcome = LiveHost().python_json(str(tmp_path / "nope"), "torch_probe.py", (), 5)
    assert outcome.start_error == "not found"


def test_parse_records_keeps_only_json_objects() -> None:
    out = 'hello\n{"a": 1}\n[1, 2]\n{"b": \n  {"c": 2}  \n'
    assert parse_records(out) == ({"a": 1}, {"c": 2})


def test_nvml_child_answers_here() -> None:
    outcome = LiveHost().python_json(sys.executable, "nvml_probe.py", (), 30)
    statuses = {r.get("status") for r in outcome.records if r.get("record") == "nvml"}
    assert statuses and statuses <= {
        "ok",
        "library_not_found",
        "driver_not_loaded",
        "pynvml_missing",
        "error",
        "version_mismatch",
        "no_permission",
    }


@posix_only
def test_an_early_child_is_adopted_not_started_twice(tmp_path: Path) -> None:
    from envdoctor.host import live

    runs = tmp_path / "runs"
    python = _fake_python(
        tmp_path, f'echo run >> "{runs}"; echo \'{{"record": "torch", "installed": false}}\''
    )
    live.start_early(python, "torch_probe.py", ("--no-smoke",))
    outcome = LiveHost().python_json(python, "torch_probe.py", ("--no-smoke",), 30)
    assert outcome.records == ({"record": "torch", "installed": False},)
    assert runs.read_text().splitlines() == ["run"]


@posix_only
def test_an_early_child_with_other_arguments_is_not_adopted_and_is_killed(tmp_path: Path) -> None:
    from envdoctor.host import live

    python = _fake_python(tmp_path, "sleep 60 & wait")
    live.start_early(python, "torch_probe.py", ("--budget", "58.0"))
    ((proc, _),) = live._EARLY.values()
    outcome = LiveHost().python_json(python, "torch_probe.py", ("--no-smoke",), 0.5)
    assert outcome.timed_out  # a child of its own, which hung like the fake does
    live.discard_early()
    assert proc.wait(timeout=10) is not None and not live._EARLY


@posix_only
def test_an_early_child_is_adopted_when_a_late_probe_asks_a_shorter_budget(tmp_path: Path) -> None:
    """A slow start-up leaves the probe less than the early start gave: the probe asks --budget 55.9
    where the early child got 58.0, both ending at the run's deadline. Adopting it saves a second
    torch import; it must still end before this call's own limit."""
    from envdoctor.host import live

    runs = tmp_path / "runs"
    python = _fake_python(
        tmp_path, f'echo "$3 $4" >> "{runs}"; echo \'{{"record": "torch", "installed": false}}\''
    )
    live.start_early(python, "torch_probe.py", ("--budget", "58.0"))
    time.sleep(0.2)  # the probe asks later, for what is left
    outcome = LiveHost().python_json(python, "torch_probe.py", ("--budget", "57.8"), 57.8)
    assert outcome.records == ({"record": "torch", "installed": False},)
    assert len(runs.read_text().splitlines()) == 1 and "--budget 58.0" in runs.read_text()
    assert not live._EARLY


@posix_only
def test_an_early_child_whose_budget_outlasts_the_probes_limit_is_not_adopted(tmp_path: Path) -> None:
    from envdoctor.host import live

    runs = tmp_path / "runs"
    python = _fake_python(tmp_path, f'echo "$3 $4" >> "{runs}"; echo \'{{"record": "torch"}}\'')
    live.start_early(python, "torch_probe.py", ("--budget", "58.0"))
    outcome = LiveHost().python_json(python, "torch_probe.py", ("--budget", "5.0"), 5.0)
    assert outcome.records == ({"record": "torch"},)
    assert live._EARLY  # still waiting to be adopted or killed at exit; this call started its own
    live.discard_early()
    deadline = time.monotonic() + 10
    while len(runs.read_text().splitlines()) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sorted(runs.read_text().splitlines()) == ["--budget 5.0", "--budget 58.0"]


@posix_only
def test_an_early_child_that_would_keep_too_little_time_to_exit_is_not_adopted(tmp_path: Path) -> None:
    """Adopted, a child must report by this call's limit with half a second to spare for its exit:
    --budget 58.0 reports by 57.0 s after its start; a call at once with 57.4 s leaves it 0.4 s."""
    from envdoctor.host import live

    python = _fake_python(tmp_path, 'echo \'{"record": "torch"}\'')
    live.start_early(python, "torch_probe.py", ("--budget", "58.0"))
    try:
        LiveHost().python_json(python, "torch_probe.py", ("--budget", "57.4"), 57.4)
        assert live._EARLY  # not adopted: this call started a child of its own
    finally:
        live.discard_early()


def test_the_hosts_idea_of_the_torch_childs_exit_margin_is_the_childs() -> None:
    import ast

    from envdoctor.host import live

    source = (Path(live.CHILD_DIR) / "torch_probe.py").read_text(encoding="utf-8")
    margins = [
        node.value.value
        for node in ast.parse(source).body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "EXIT_MARGIN" for t in node.targets)
        and isinstance(node.value, ast.Constant)
    ]
    assert margins == [live._REPORTED_BEFORE_BUDGET_ENDS]


def test_the_running_interpreter_says_what_its_python_info_child_would() -> None:
    """LiveHost answers python_info.py for its own interpreter in-process (no child start-up); the
    answer must be the child's, record for record."""
    import subprocess

    from envdoctor.host.live import CHILD_DIR

    here = LiveHost().python_json(sys.executable, "python_info.py", (), 20.0)
    child = subprocess.run(
        [sys.executable, "-B", str(CHILD_DIR / "python_info.py")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert here.returncode == 0 and here.records, here
    assert here.records == parse_records(child.stdout)


def test_another_environment_still_asks_a_child(monkeypatch: pytest.MonkeyPatch) -> None:
    """PYTHONHOME or PYTHONPATH may change what the same interpreter says: then a child is asked."""
    from envdoctor.host import live

    def no_child(*args: object, **kwargs: object) -> None:
        raise AssertionError("the in-process answer was used for another environment")

    assert live._is_this_process(sys.executable, dict(os.environ))
    assert not live._is_this_process(sys.executable, {**os.environ, "PYTHONPATH": "/elsewhere"})
    assert not live._is_this_process(sys.executable + "3", dict(os.environ))
    monkeypatch.setattr(live, "_python_info_here", no_child)
    other = live.LiveHost({**os.environ, "PYTHONPATH": os.getcwd()})
    outcome = other.python_json(sys.executable, "python_info.py", (), 20.0)
    assert outcome.returncode == 0 and outcome.records


def test_waiting_for_a_child_ends_with_it_or_at_the_limit() -> None:
    """The pidfd wait (Popen.wait elsewhere): the child's end reaps it; a child still running at the
    limit is TimeoutExpired, as with Popen.wait, and is left for the caller to stop."""
    import subprocess

    from envdoctor.host.live import _wait

    quick = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    _wait(quick, 60.0)
    assert quick.returncode == 3
    slow = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        _wait(slow, 0.2)
    assert time.monotonic() - started < 30 and slow.returncode is None
    slow.kill()
    slow.wait()
