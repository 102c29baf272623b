"""Fixtures shared across the suite: envdoctor's cache in a temporary folder, the command line
in-process, one real torch child per argument list for the whole run, and no network beyond
127.0.0.1.

`check` and `install` ask PyTorch's index and the configured ones whether they answer; here they
are told they are offline (ENVDOCTOR_OFFLINE, which the children the tests start inherit too).
Tests of reachability serve their own index on 127.0.0.1 and call the checks directly, or give a
FakeHost the answers.
"""

from __future__ import annotations

import compileall
import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from envdoctor.host.base import ChildOutcome
from envdoctor.host.fake import take_unscripted
from envdoctor.host.live import LiveHost
from tests import early
from tests.cli_support import Run, run_cli
from tests.early import Job, stop_queue
from tests.real_torch import RealTorchChild, real_torch_child

os.environ.setdefault("ENVDOCTOR_OFFLINE", "1")
# Output wraps to COLUMNS (issue 13 item 22). pytest-xdist's workers export COLUMNS=80 and a user's
# shell may export its own: the tests that are about widths set it themselves, the others read the
# output of a pipe, whole lines.
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)

ROOT = Path(__file__).resolve().parent.parent


def _compile_bytecode() -> None:
    """envdoctor's bytecode beside its sources, once, as `pip install` leaves it. Where
    PYTHONDONTWRITEBYTECODE is set (this machine and many CI images set it) nothing else writes it,
    and every envdoctor process a test starts would compile every module it imports again: about
    0.7 s of CPU per process, hundreds of times. The test modules' assertion-rewritten bytecode is
    kept too (pytest writes it only when Python may). __pycache__ is ignored by git."""
    for tree in ("envdoctor", "tests"):  # tests: helper modules that test subprocesses import
        compileall.compile_dir(ROOT / tree, quiet=2)
    sys.dont_write_bytecode = False


_compile_bytecode()


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    # Set in os.environ so that the CLI subprocesses the tests start inherit it too.
    before = os.environ.get("ENVDOCTOR_CACHE_DIR")
    os.environ["ENVDOCTOR_CACHE_DIR"] = str(tmp_path_factory.mktemp("envdoctor-cache"))
    yield
    if before is None:
        os.environ.pop("ENVDOCTOR_CACHE_DIR", None)
    else:
        os.environ["ENVDOCTOR_CACHE_DIR"] = before


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist, the folder in which the workers share their early runs (tests/early.py);
    made here, in the main process, so that every worker inherits it."""
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        return
    os.environ[early.SHARED_VARIABLE] = tempfile.mkdtemp(prefix="envdoctor-early-")


def pytest_unconfigure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return
    folder = os.environ.pop(early.SHARED_VARIABLE, None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    """Under pytest-xdist, a test marked `exclusive` (it holds a wall-clock bound) runs while no
    other worker runs a test: the other worker's load is not envdoctor's slowness."""
    folder = early.shared_folder()
    if folder is None:
        yield
        return
    with _turn(folder, exclusive=item.get_closest_marker("exclusive") is not None):
        yield


@contextlib.contextmanager
def _turn(folder: Path, exclusive: bool) -> Iterator[None]:
    """A readers-writer lock between the workers (flock). Every test holds `run` shared, an
    exclusive one holds it alone; `gate` lets an exclusive test in: while it waits at `run`, the
    other workers' next tests wait at the gate instead of keeping `run` shared without end."""
    try:
        import fcntl
    except ImportError:  # Windows: no flock; the bounds have their own slack
        yield
        return
    with open(folder / "gate.lock", "a+b") as gate, open(folder / early.RUN_LOCK, "a+b") as run:
        if exclusive:
            fcntl.flock(gate, fcntl.LOCK_EX)
            fcntl.flock(run, fcntl.LOCK_EX)
        else:
            fcntl.flock(gate, fcntl.LOCK_SH)
            fcntl.flock(run, fcntl.LOCK_SH)
            fcntl.flock(gate, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(run, fcntl.LOCK_UN)
            fcntl.flock(gate, fcntl.LOCK_UN)


def pytest_itemcollected(item: pytest.Item) -> None:
    """A test that needs an early run (a real torch child, a check process, mypy) is slow: the
    fast tier (`-m "not slow"`) starts none of them."""
    if item.get_closest_marker("early") is not None:
        item.add_marker(pytest.mark.slow)


@pytest.hookimpl(trylast=True)  # after `-m`/`-k` deselect: a deselected test's runs never start
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Queue the early runs the selected tests declare (tests/early.py), and run those tests last:
    the other tests then run while the queue works, and the runs are done when they are needed."""
    if config.option.collectonly:
        return
    waiting = [item for item in items if item.get_closest_marker("early") is not None]
    for item in waiting:
        # Background runs wait while an exclusive test runs (early.beside_the_tests): an exclusive
        # test waiting for one would wait for ever.
        assert item.get_closest_marker("exclusive") is None, f"{item.nodeid}: exclusive and early"
        for marker in item.iter_markers("early"):
            for job in marker.args:
                assert isinstance(job, Job), f"{item.nodeid}: @pytest.mark.early takes Job objects"
                job.start()
    items[:] = [item for item in items if item.get_closest_marker("early") is None] + waiting


def pytest_sessionfinish() -> None:
    stop_queue()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failed test also shows the FakeHost calls it did not script: often the reason it failed."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.when == "call" and report.failed:
        unscripted = take_unscripted()
        if unscripted:
            report.sections.append(("FakeHost: unscripted calls", "\n".join(dict.fromkeys(unscripted))))


@pytest.fixture(autouse=True)
def fake_hosts_are_strict() -> Iterator[None]:
    """Fail a test whose FakeHost was asked something the test did not script, even where the engine
    turned the error into a failed probe or a probe caught it."""
    take_unscripted()
    yield
    unscripted = take_unscripted()
    if unscripted:
        pytest.fail("\n".join(dict.fromkeys(unscripted)), pytrace=False)


@pytest.fixture(autouse=True)
def secrets_learned_stay_with_their_test() -> Iterator[None]:
    """Redaction remembers the secret values it has read (util/redact.py) for the whole process: a
    test whose files held `https://user:password@...` would mask the word "password" in every later
    test of its worker, which is right for one envdoctor run and wrong between tests."""
    from envdoctor.util import redact

    before = redact.learned()
    yield
    redact.relearn(before)


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Callable[..., Run]:
    """`envdoctor ARGV...` run in this process, as a user with no environment activated would run it."""
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    monkeypatch.delenv("CONDA_PREFIX", raising=False)

    def invoke(*argv: str) -> Run:
        return run_cli(capsys, monkeypatch, *argv)

    return invoke


@pytest.fixture
def shared_torch_child(monkeypatch: pytest.MonkeyPatch) -> RealTorchChild:
    """Live checks in this test get the real torch child, run once per argument list for the session.

    Importing torch and running the CPU smoke test cost seconds per start on this machine, and for the
    same interpreter and arguments the child answers the same within one run. Everything else a live
    check does (other children, files, the environment) stays live.
    """
    spy = RealTorchChild()
    real = LiveHost.python_json

    def python_json(
        self: LiveHost, interpreter: str, script: str, args: Sequence[str], timeout: float
    ) -> ChildOutcome:
        if script != "torch_probe.py":
            return real(self, interpreter, script, args, timeout)
        spy.asked.append(tuple(args))
        return real_torch_child(interpreter, spy.answered_args(args), timeout)

    monkeypatch.setattr(LiveHost, "python_json", python_json)
    return spy
