"""Processes and time: nothing is left running, every run ends within --timeout + 1 s, and every
child's output is bounded. Real processes: envdoctor as users start it, a `torch` whose import
hangs, an nvcc that hangs, interpreters that never answer or never stop printing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from envdoctor.host.live import LiveHost
from envdoctor.model.sources import UNREADABLE
from envdoctor.probes.mirrors import collect_pip, collect_uv
from envdoctor.target import PythonInfo

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.name != "posix", reason="process groups and signals are POSIX"),
]

ENVDOCTOR = [sys.executable, "-m", "envdoctor"]
HANGING_TORCH = """\
import os, time
with open(os.environ["ED_TEST_PIDS"], "a") as handle:
    handle.write("torch %d\\n" % os.getpid())
time.sleep(1000)
"""
HANGING_NVCC = """\
#!/bin/sh
echo "nvcc $$" >> "$ED_TEST_PIDS"
exec sleep 1000
"""


def measure_slack() -> float:
    """What this machine adds to the +1 s: the wall time of a `check` that runs no child
    (`check --only system`, best of three) beyond the 0.7 s it takes on an idle 2-core machine, so a
    loaded test machine does not fail a bound meant for envdoctor itself. (`--version` was the
    yardstick before; it takes the lean path, so it missed the load a full `check` start-up feels.)
    Measured only when a bounded run missed its bound, right then: the suite's other worker
    (pytest-xdist) and the early runs load the machine differently from one moment to the next, and
    three `check` starts before every bounded run cost more than the runs themselves."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as the bounded runs (Machine)
    times = []
    for _ in range(3):
        started = time.monotonic()
        subprocess.run(
            [*ENVDOCTOR, "check", "--only", "system", "-f", "json", "--offline"],
            env=env,
            capture_output=True,
            check=False,
            timeout=60,
        )
        times.append(time.monotonic() - started)
    return max(0.0, min(times) - 0.7)


class Machine:
    """A temporary set-up: a hanging torch on PYTHONPATH, optionally a hanging nvcc on PATH."""

    def __init__(self, root: Path, nvcc: bool) -> None:
        self.root = root
        self.pids = root / "pids.txt"
        package = root / "site" / "torch"
        package.mkdir(parents=True)
        (package / "__init__.py").write_text(HANGING_TORCH, encoding="utf-8")
        self.env = {
            **os.environ,
            "PYTHONPATH": str(root / "site"),
            "ED_TEST_PIDS": str(self.pids),
            "HOME": str(root),
        }
        self.env.pop("VIRTUAL_ENV", None)
        self.env.pop("CONDA_PREFIX", None)
        # Compiled envdoctor for these runs (conftest.py compiles it once beside the sources; where
        # it did not, the first run writes it): with PYTHONDONTWRITEBYTECODE set (CI images often
        # set it) every start would compile all of envdoctor again and spend the budget on that.
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)
        if nvcc:
            bin_dir = root / "bin"
            bin_dir.mkdir()
            (bin_dir / "nvcc").write_text(HANGING_NVCC, encoding="utf-8")
            (bin_dir / "nvcc").chmod(0o755)
            self.env["PATH"] = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"

    def started(self) -> dict[str, list[int]]:
        found: dict[str, list[int]] = {}
        if self.pids.exists():
            for line in self.pids.read_text(encoding="utf-8").splitlines():
                name, pid = line.split()
                found.setdefault(name, []).append(int(pid))
        return found

    def run_within(self, bound: float, *argv: str) -> tuple[subprocess.CompletedProcess[str], float, float]:
        """Run, held to `bound` (envdoctor's own: --timeout + 1 s); returns the run, its seconds and
        the bound it is held to. A run that missed it is allowed what this machine adds (the slack,
        measured only then), and runs once more when it missed that too: a wall-clock bound on a
        shared test machine can be missed by a burst of load, not twice running by envdoctor."""
        done, seconds = self.run(*argv)
        if seconds < bound:
            return done, seconds, bound
        bound += measure_slack()
        if seconds < bound:
            return done, seconds, bound
        _assert_all_gone(self.started())  # the first run left nothing behind either
        self.pids.unlink(missing_ok=True)  # so the checks below count the second run's children
        done, seconds = self.run(*argv)
        return done, seconds, bound

    def run(self, *argv: str, timeout: float = 60) -> tuple[subprocess.CompletedProcess[str], float]:
        started = time.monotonic()
        done = subprocess.run(
            [*ENVDOCTOR, *argv], capture_output=True, text=True, env=self.env, timeout=timeout, cwd=self.root
        )
        return done, time.monotonic() - started


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _assert_all_gone(pids: dict[str, list[int]]) -> None:
    deadline = time.monotonic() + 2  # SIGKILL is immediate; the kernel may take a moment to reap
    while time.monotonic() < deadline and any(_alive(p) for ps in pids.values() for p in ps):
        time.sleep(0.05)
    left = {name: [p for p in ps if _alive(p)] for name, ps in pids.items()}
    assert not any(left.values()), f"still running: {left}"


@pytest.fixture
def machine(tmp_path: Path) -> Iterator[Machine]:
    made = Machine(tmp_path, nvcc=True)
    yield made
    for pids in made.started().values():  # never leave the test's own sleepers behind
        for pid in pids:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


# --- 6: a hung import is ED003 at every --timeout, and the child is killed ----------------------


@pytest.mark.exclusive
# 1 and 3: the child's limit is --timeout less a quarter below 8 s (torch_build.child_timeout), so 5
# took the same path as 3 at two more seconds of the whole suite waiting.
@pytest.mark.parametrize("timeout", [1, 3])
def test_a_hung_torch_import_is_ed003_at_every_timeout(machine: Machine, timeout: int) -> None:
    done, seconds, bound = machine.run_within(
        timeout + 1, "check", "--only", "torch", "--timeout", str(timeout), "-f", "json"
    )
    report = json.loads(done.stdout)
    codes = {f["code"] for f in report["findings"]}
    assert "ED003" in codes and "ED901" not in codes, codes
    assert done.returncode == 1
    assert seconds < bound, seconds
    _assert_all_gone(machine.started())


def test_a_hung_torch_import_with_the_early_child_is_killed(machine: Machine) -> None:
    # Plain `check` starts the torch child before the CLI loads (launch.py); --no-smoke etc. would
    # skip that. The check gives up at its own --timeout of 60 s, so stop it with SIGTERM instead.
    proc = subprocess.Popen(
        [*ENVDOCTOR, "check"],
        env=machine.env,
        cwd=machine.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _wait_for(machine, ("torch", "nvcc"))
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == 130
    assert len(err.decode().strip().splitlines()) == 1, err
    _assert_all_gone(machine.started())


# --- 5: Ctrl-C, SIGTERM, SIGHUP kill every child's process group; exit 130, one line ---------


def _wait_for(machine: Machine, names: tuple[str, ...], limit: float = 30) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if all(name in machine.started() for name in names):
            return
        time.sleep(0.05)
    raise AssertionError(f"the children never started: {machine.started()}")


@pytest.mark.parametrize(
    ("sig", "argv"),
    [
        (signal.SIGINT, ["check", "--timeout", "60"]),
        (signal.SIGTERM, ["check", "--python", sys.executable, "-f", "json"]),
        (signal.SIGHUP, ["snapshot", "--timeout", "60"]),
        (signal.SIGINT, ["report"]),
    ],
    ids=["check-SIGINT", "check-SIGTERM", "snapshot-SIGHUP", "report-SIGINT"],
)
def test_a_signal_stops_every_child(machine: Machine, sig: signal.Signals, argv: list[str]) -> None:
    proc = subprocess.Popen(
        [*ENVDOCTOR, *argv], env=machine.env, cwd=machine.root, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    _wait_for(machine, ("torch", "nvcc"))
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == 130, err
    lines = err.decode().strip().splitlines()
    assert len(lines) == 1 and "interrupted" in lines[0], err
    _assert_all_gone(machine.started())


# --- 7: a hanging nvcc is run once, bounded, named -----------------------------------------------


@pytest.mark.exclusive
def test_a_hanging_nvcc_is_run_once_bounded_and_named(machine: Machine) -> None:
    machine.env["CUDA_HOME"] = str(machine.root)  # its bin/nvcc is the same hanging script
    # --timeout 3: nvcc gets a third of it (toolkit.nvcc_timeout), far below its 10 s cap as at 6.
    done, seconds, bound = machine.run_within(
        3 + 1, "check", "--only", "toolkit", "--timeout", "3", "-f", "json"
    )
    report = json.loads(done.stdout)
    toolkit = next(p for p in report["probes"] if p["name"] == "toolkit")
    assert toolkit["status"] == "ok", toolkit  # not the whole area lost to a timeout
    area = next(a for a in report["areas"] if a["area"] == "toolkit")
    assert "nvcc --version hung for" in area["verdict"], area
    assert len(machine.started()["nvcc"]) == 1  # once, not once per path to the same file
    assert seconds < bound, seconds
    _assert_all_gone(machine.started())


# --- 8: --python that never answers, or never stops printing ------------------------------------


PROGRAMS = {
    "hangs": ('#!/bin/sh\necho "python $$" >> "$ED_TEST_PIDS"\nexec sleep 1000\n', "hung for"),
    "floods": ('#!/bin/sh\necho "python $$" >> "$ED_TEST_PIDS"\nexec yes flood\n', "printed more than"),
    "/usr/bin/yes": (None, "not a runnable Python interpreter"),
}


@pytest.mark.exclusive
@pytest.mark.parametrize("kind", list(PROGRAMS))
def test_a_python_that_never_answers_is_bounded_by_the_timeout(machine: Machine, kind: str) -> None:
    script, says = PROGRAMS[kind]
    program = Path(kind)
    if script is not None:
        program = machine.root / f"python-{kind}"
        program.write_text(script, encoding="utf-8")
        program.chmod(0o755)
    elif not program.exists():
        pytest.skip(f"no {kind}")
    # --timeout 2 (3 before): a flood ends at the output cap, not the timeout, and needs the room on a
    # loaded machine; 1 s was too little there.
    done, seconds, bound = machine.run_within(2 + 1, "check", "--python", str(program), "--timeout", "2")
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "not a runnable Python interpreter" in lines[0], done.stderr
    assert says in lines[0]
    assert seconds < bound, seconds
    _assert_all_gone(machine.started())


def test_a_flood_of_output_is_cut_and_the_child_stopped() -> None:
    host = LiveHost()
    started = time.monotonic()
    result = host.run(["/usr/bin/yes"], timeout=30)
    assert time.monotonic() - started < 10
    assert result.start_error and "printed more than" in result.start_error
    assert len(result.stdout) <= 8 * 1024 * 1024


# --- 9: a FIFO or a device where a config file should be -----------------------------------------


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_config_paths_that_are_no_regular_files_are_that_files_status(tmp_path: Path, kind: str) -> None:
    home = tmp_path / "home"
    (home / ".config" / "pip").mkdir(parents=True)
    (home / ".config" / "uv").mkdir(parents=True)
    paths = [home / ".config" / "pip" / "pip.conf", home / ".config" / "uv" / "uv.toml"]
    for path in paths:
        if kind == "fifo":
            os.mkfifo(path)
        else:
            path.symlink_to(kind)
    host = LiveHost({"HOME": str(home), "PATH": os.environ.get("PATH", "")})
    info = PythonInfo(sys.executable, "3.11.7", "CPython", 64, str(tmp_path / "env"), True, False)
    started = time.monotonic()
    pip = collect_pip(host, "linux", info)
    uv = collect_uv(host, "linux")
    assert time.monotonic() - started < 2
    for path in paths:
        found = [f for f in (*pip.files, *uv.files) if f.path == str(path)]
        assert found and found[0].status == UNREADABLE, found
        assert found[0].error and "not a regular file" in found[0].error


# --- every run ends within --timeout + 1 s --------------------------------------------------------


@pytest.mark.exclusive
def test_every_run_ends_within_the_timeout(machine: Machine) -> None:
    # --timeout 2: every probe still starts (the hung torch and nvcc among them) and is cut short.
    done, seconds, bound = machine.run_within(2 + 1, "check", "--timeout", "2", "-f", "json")
    assert done.returncode in (0, 1), done.stderr
    assert seconds < bound, seconds
    codes = {f["code"] for f in json.loads(done.stdout)["findings"]}
    assert "ED003" in codes
    _assert_all_gone(machine.started())


def test_a_program_using_envdoctor_leaves_no_child_at_exit(machine: Machine) -> None:
    # envdoctor.require() in someone's program: no console entry point, no signal handlers. A child
    # still running when that program exits is killed with it (atexit).
    script = (
        "import os, sys, threading, time\n"
        "from envdoctor.host.live import LiveHost\n"
        "run = lambda: LiveHost().python_json(sys.executable, 'torch_probe.py', ('--no-smoke',), 100)\n"
        "threading.Thread(target=run, daemon=True).start()\n"
        "while not os.path.exists(os.environ['ED_TEST_PIDS']):\n"
        "    time.sleep(0.05)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], env=machine.env, cwd=machine.root, timeout=60)
    assert done.returncode == 0
    _assert_all_gone(machine.started())


# --- a signal while the main thread starts, forgets or kills a child (the race behind the flakes) --

SIGNAL_DURING_START = """\
import contextlib, os, signal, subprocess, sys
from envdoctor.util import lifecycle

signal.signal(signal.SIGINT, lifecycle._on_signal)


def start():
    proc = subprocess.Popen(["sleep", "100"], start_new_session=True)
    print(proc.pid, flush=True)
    os.kill(os.getpid(), signal.SIGINT)  # after the fork, before track has registered the child
    for _ in range(10000):  # the handler runs at one of these bytecodes
        pass
    return proc


section = lifecycle.interruptible() if sys.argv[1] == "interruptible" else contextlib.nullcontext()
try:
    with section:
        lifecycle.track(start)
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


@pytest.mark.parametrize("mode", ["exits", "interruptible"])
def test_a_signal_while_a_child_starts_kills_it_and_never_deadlocks(tmp_path: Path, mode: str) -> None:
    script = tmp_path / "start.py"
    script.write_text(SIGNAL_DURING_START, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script), mode], capture_output=True, text=True, timeout=20
    )  # before the fix: the handler waited forever for the lock the main thread held
    lines = done.stdout.split()
    pid = int(lines[0])
    try:
        if mode == "interruptible":  # envdoctor fix: a KeyboardInterrupt to report what changed
            assert lines[1:] == ["interrupted"], done
        else:  # anything else: exit 130 from the handler, nothing raised into arbitrary code
            assert done.returncode == 130 and len(lines) == 1, done
        assert "interrupted (SIGINT)" in done.stderr and "Traceback" not in done.stderr, done.stderr
        _assert_all_gone({"sleep": [pid]})
    finally:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


EXEC_THEN_CATCH = """\
import os, signal, sys
from envdoctor.util import lifecycle

signal.signal(signal.SIGINT, lifecycle._on_signal)
try:
    # A handler that raised inside exec() of source text (dataclasses builds __init__ so) made
    # CPython end the process by SIGINT (-2) even though the KeyboardInterrupt was caught.
    exec("import os, signal\\nos.kill(os.getpid(), signal.SIGINT)\\nfor _ in range(10000): pass\\n")
except KeyboardInterrupt:
    sys.exit(130)
print("went on", flush=True)
"""


def test_a_signal_inside_exec_of_source_text_still_exits_130(tmp_path: Path) -> None:
    (tmp_path / "exec_then_catch.py").write_text(EXEC_THEN_CATCH, encoding="utf-8")
    done = subprocess.run(  # run with -m, as `python -m envdoctor`: the case CPython mishandles
        [sys.executable, "-m", "exec_then_catch"],
        capture_output=True,
        text=True,
        timeout=20,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
    )
    assert done.returncode == 130, done
    assert done.stdout == "" and done.stderr.strip().splitlines() == [
        "envdoctor: interrupted (SIGINT); stopped every process it had started"
    ], done


def test_each_check_after_the_first_gets_its_own_full_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """`envdoctor fix --yes`: the check after a pip install that took longer than --timeout gets the
    whole --timeout again (it used to count from the process's start: its probes got half a second,
    the torch import "hung" and the working install was undone); the first check still counts its
    start-up."""
    from envdoctor.util import lifecycle

    started = time.monotonic() - 300  # the process began 5 minutes ago (a long pip install)
    monkeypatch.setattr(lifecycle, "_started", started)
    monkeypatch.setattr(lifecycle, "_checks_timed", 0)
    assert lifecycle.deadline(60) == started + 60  # the check before: start-up included
    before = time.monotonic()
    after_check = lifecycle.deadline(60)
    assert before + 60 <= after_check <= time.monotonic() + 60
    assert lifecycle.question_timeout(after_check) >= 0.8 * 59
