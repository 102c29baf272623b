"""`envdoctor cluster`: what each rank of a launched job does, and how rank 0 reports for all.

Every rank, with its own clock and --timeout T (R below is the time left once it reached the store):
  1. the node's first rank (local rank 0) starts the node's check in the background;
  2. imports torch, connects to the launcher's store (rank 0 hosts it unless torchrun's agent does),
     and posts who it is (RankInfo) and a heartbeat;
  3. rank 0 waits for every rank's arrival (until 0.55 R), then posts the plan: the backend, or why
     no collective runs (ranks missing);
  4. the node's first rank posts its snapshot (or why there is none);
  5. every rank joins a process group and runs the all-reduce (allreduce.py) in a worker thread,
     bounded by 0.8 R, posting its stage as it goes;
  6. rank 0 gathers everything until 0.85 R, tells dead ranks from hung ones by their heartbeats,
     judges, prints, and posts the exit code; the other ranks exit with that code.
A watchdog ends any rank at T + 2 s whatever it is doing: no rank hangs a job step past its timeout.
Test hooks (ENVDOCTOR_TEST_HANG / ENVDOCTOR_TEST_CRASH = "RANK@STAGE,...") make a rank hang or exit
right after it posts a stage; the fleet tests use them. ENVDOCTOR_TRACE=1 logs each rank's steps."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import field
from datetime import timedelta
from typing import Any

from envdoctor.fleet import allreduce
from envdoctor.fleet.exchange import Exchange, Heartbeat, connect
from envdoctor.fleet.facts import (
    Collective,
    CollectiveResult,
    FleetFacts,
    FleetMode,
    NodeCheck,
    RankInfo,
    RankOutcome,
    RankState,
    Rendezvous,
    Stage,
)
from envdoctor.fleet.launcher import Launch
from envdoctor.fleet.nodes import Grouper, diagnose_snapshot, stack_of
from envdoctor.fleet.rank_info import NodeCheck as NodeCheckRun
from envdoctor.fleet.rank_info import describe, is_loopback, loopback_interface
from envdoctor.fleet.report import FleetReport, build_report
from envdoctor.model.findings import Severity
from envdoctor.probes import CheckOptions
from envdoctor.settings import Settings
from envdoctor.util import threads
from envdoctor.util.records import record

# Each phase ends at this fraction of --timeout after the rank started.
CONNECT_BY = 0.30
CHECK_BY = 0.50
JOIN_BY = 0.55
COLLECTIVE_BY = 0.80
GATHER_BY = 0.85
ACK_BY = 0.95
REPORT_MARGIN = 2.0  # seconds kept for judging and printing before --timeout
WATCHDOG_GRACE = 2.0
POLL = 0.05
DEAD_AFTER = 1.0  # seconds without a heartbeat: the process is gone
EXIT_USAGE = 2
_TEST_EXIT = 70  # the exit code of a rank the crash hook ends


@record
class ClusterOptions:
    timeout: float = 120.0
    backend: str = "auto"  # auto, nccl or gloo
    smoke: bool = True
    smoke_size: int | None = None
    bandwidth_seconds: float = 1.0
    bandwidth_mib: int | None = None
    settings: Settings = field(default_factory=Settings)


@record
class Plan:
    """Rank 0's decision, read by every rank, so that all of them do the same thing."""

    attempt: bool
    backend: str = "gloo"
    reason: str | None = None


class _Stopped(Exception):
    """The launcher sent SIGTERM (torchrun does when another worker exits)."""


class Hooks:
    """ENVDOCTOR_TEST_HANG / ENVDOCTOR_TEST_CRASH = "RANK@STAGE,...": for tests only."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.hang = self._parse(env.get("ENVDOCTOR_TEST_HANG", ""))
        self.crash = self._parse(env.get("ENVDOCTOR_TEST_CRASH", ""))

    @staticmethod
    def _parse(spec: str) -> set[tuple[int, str]]:
        found = set()
        for item in spec.split(","):
            rank, _, stage = item.strip().partition("@")
            if rank.strip().isdigit() and stage:
                found.add((int(rank), stage.strip()))
        return found

    def at(self, rank: int, stage: Stage) -> None:
        if (rank, stage.value) in self.crash:
            os._exit(_TEST_EXIT)
        if (rank, stage.value) in self.hang:
            while True:  # the watchdog ends this process
                time.sleep(3600)


def process_started() -> float:
    """When this process started, on the monotonic clock: --timeout counts from there, so the time
    Python took to start and import envdoctor is part of it."""
    try:
        import psutil

        age = time.time() - float(psutil.Process().create_time())
    except Exception:  # no process table to read: count from now
        age = 0.0
    return float(time.monotonic() - min(max(age, 0.0), 60.0))


def finish(code: int) -> None:
    """Leave now: threads may sit in a collective that never returns, and the process group's
    teardown would wait for them."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def run_cluster(
    launch: Launch,
    options: ClusterOptions,
    emit: Callable[[FleetReport], None],
    env: Mapping[str, str] = os.environ,
) -> int:
    return RankRun(launch, options, emit, env).run()


def _describe_error(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}".rstrip(": ")[:500]


class RankRun:
    def __init__(
        self,
        launch: Launch,
        options: ClusterOptions,
        emit: Callable[[FleetReport], None],
        env: Mapping[str, str],
    ) -> None:
        from envdoctor.host.live import LiveHost

        self.launch = launch
        self.options = options
        self.emit = emit
        self.host = LiveHost()
        self.started = process_started()
        self.ready = self.started  # when this rank reached the store
        self.hooks = Hooks(env)
        self.stage: Stage | None = None
        self.exchange: Exchange | None = None
        self.rendezvous: Rendezvous | None = None
        self.info: RankInfo | None = None
        self.stopped = False
        self.reported = threading.Event()
        self.trace = bool(env.get("ENVDOCTOR_TRACE"))
        self.collective_seconds = 0.0

    # --- time ------------------------------------------------------------------------------------

    def deadline(self, fraction: float) -> float:
        """Phases share the time left once this rank reached the store: on a cluster where importing
        torch takes a minute, every rank is late alike, and the phases still fit before --timeout."""
        end = self.started + self.options.timeout - min(REPORT_MARGIN, 0.1 * self.options.timeout)
        return self.ready + fraction * max(0.0, end - self.ready)

    def left(self, fraction: float) -> float:
        return max(0.0, self.deadline(fraction) - time.monotonic())

    def _watchdog(self) -> None:
        def guard() -> None:
            time.sleep(max(0.0, self.started + self.options.timeout + WATCHDOG_GRACE - time.monotonic()))
            stage = self.stage.value if self.stage else "start"
            sys.stderr.write(
                f"envdoctor: rank {self.launch.rank} ran out of time (--timeout {self.options.timeout:g}) "
                f"after stage {stage}; exiting\n"
            )
            finish(EXIT_USAGE)

        threads.start(guard, "envdoctor-watchdog")

    def _on_sigterm(self, signum: int, frame: object) -> None:
        if self.stopped or self.reported.is_set():
            return
        self.stopped = True
        raise _Stopped()

    # --- the flow --------------------------------------------------------------------------------

    def run(self) -> int:
        self._watchdog()
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._on_sigterm)
        check = self._start_check() if self.launch.is_leader else None
        try:
            return self._run(check)
        except _Stopped:
            if self.launch.rank == 0 and self.exchange is not None:
                return self._report(None, Plan(False, reason="the launcher stopped the job (SIGTERM)"))
            return 1
        except Exception as exc:  # a bug of envdoctor's: one line, exit 2, and tell the others
            sys.stderr.write(f"envdoctor: error: rank {self.launch.rank}: {_describe_error(exc)}\n")
            if self.exchange is not None:
                try:
                    key = "verdict" if self.launch.rank == 0 else f"error/{self.launch.rank}"
                    self.exchange.put(
                        key, str(EXIT_USAGE).encode() if key == "verdict" else str(exc).encode()
                    )
                except Exception:
                    pass
            return EXIT_USAGE

    def _start_check(self) -> NodeCheckRun:
        options = CheckOptions(
            smoke=self.options.smoke,
            smoke_size=self.options.smoke_size,
            timeout=max(1.0, CHECK_BY * self.options.timeout),
        )
        check = NodeCheckRun(self.host, self.options.settings, options)
        check.start()
        return check

    def _run(self, check: NodeCheckRun | None) -> int:
        launch = self.launch
        try:
            import torch
            import torch.distributed as dist
        except Exception as exc:
            return self._alone(check, f"torch cannot be imported in this process ({_describe_error(exc)})")
        self._note("torch imported")
        if not dist.is_available():
            return self._alone(check, "this torch build has no torch.distributed")
        serve = launch.rank == 0 and not launch.agent_store
        self.exchange, self.rendezvous = connect(dist, launch, self.left(CONNECT_BY), serve)
        self.ready = time.monotonic()
        self._note(f"store: {self.rendezvous.role}, reached={self.rendezvous.reached}")
        if self.exchange is None:
            return self._alone(check, None)
        exchange = self.exchange
        self.info = describe(torch, dist, launch, self.host)
        exchange.put(f"beat/{launch.rank}", b"0")
        exchange.put_record(f"info/{launch.rank}", self.info)
        self._post(Stage.STARTED)
        if launch.rank != 0:
            beat, _ = connect(dist, launch, self.left(CONNECT_BY) + 1.0, serve=False)
            if beat is not None:
                Heartbeat(beat, launch.rank).start()
        plan = self._plan() if launch.rank == 0 else None
        if check is not None:
            snapshot, error = check.result(self.left(CHECK_BY))
            if snapshot is not None:
                from envdoctor.snapshot import dumps

                exchange.put_blob(f"snapshot/{launch.rank}", dumps(snapshot))
            else:
                exchange.put(f"checkerror/{launch.rank}", (error or "no snapshot").encode())
        self._post(Stage.CHECKED)
        plan = plan or self._await_plan()
        self._note(f"plan: {plan}")
        if plan is None:  # rank 0 gave no plan: it is gone
            return self._await_verdict()
        result = self._collective(torch, dist, plan) if plan.attempt else None
        if result is None or result.error is None:  # a stuck rank keeps the stage it got stuck after
            self._post(Stage.DONE)
        if self.launch.rank == 0:
            return self._report(result, plan)
        exchange.put_record(
            f"result/{launch.rank}", result or CollectiveResult(backend=plan.backend, correct=None)
        )
        return self._await_verdict()

    def _note(self, what: str) -> None:
        """ENVDOCTOR_TRACE=1: each rank's steps with their time since start, on stderr."""
        if self.trace:
            sys.stderr.write(
                f"envdoctor: rank {self.launch.rank} +{time.monotonic() - self.started:.2f}s {what}\n"
            )

    def _post(self, stage: Stage) -> None:
        self._note(stage.value)
        self.stage = stage
        if self.exchange is not None:
            self.exchange.put(f"stage/{self.launch.rank}", stage.value.encode())
        self.hooks.at(self.launch.rank, stage)

    # --- rank 0 decides ----------------------------------------------------------------------------

    def _plan(self) -> Plan:
        assert self.exchange is not None
        # While the others arrive: load what the report needs, so printing it costs no imports later.
        import envdoctor.fleet.render
        import envdoctor.rules  # noqa: F401

        keys = [f"info/{r}" for r in range(self.launch.world_size)]
        while not self.exchange.has(keys) and time.monotonic() < self.deadline(JOIN_BY):
            time.sleep(POLL)
        missing = [r for r in range(self.launch.world_size) if not self.exchange.has([f"info/{r}"])]
        if missing:
            shown = ", ".join(str(r) for r in missing[:16])
            plan = Plan(
                False, reason=f"{len(missing)} of {self.launch.world_size} ranks never arrived ({shown})"
            )
        else:
            infos = [self.exchange.get_record(f"info/{r}", RankInfo) for r in range(self.launch.world_size)]
            plan = Plan(True, backend=self._backend([i for i in infos if i is not None]))
        self.exchange.put_record("plan", plan)
        return plan

    def _backend(self, infos: list[RankInfo]) -> str:
        if self.options.backend != "auto":
            return self.options.backend
        everyone_gpu = all(i.device.startswith("cuda") and i.nccl for i in infos)
        return "nccl" if infos and everyone_gpu else "gloo"

    def _await_plan(self) -> Plan | None:
        assert self.exchange is not None
        while time.monotonic() < self.deadline(COLLECTIVE_BY):
            plan = self.exchange.get_record("plan", Plan)
            if plan is not None:
                return plan
            time.sleep(POLL)
        return None

    # --- the collective ----------------------------------------------------------------------------

    def _collective(self, torch: Any, dist: Any, plan: Plan) -> CollectiveResult:
        launch = self.launch
        budget = self.left(COLLECTIVE_BY)
        box: dict[str, Any] = {}
        if (
            plan.backend == "gloo"
            and is_loopback(launch.master_addr)
            and "GLOO_SOCKET_IFNAME" not in os.environ
        ):
            # A job on one machine's loopback stays on loopback: no traffic leaves the addresses given.
            loopback = loopback_interface()
            if loopback:
                os.environ["GLOO_SOCKET_IFNAME"] = loopback

        def work() -> None:
            try:
                pg_store, _ = connect(dist, launch, budget, serve=False, prefix="pg/")
                if pg_store is None:
                    raise RuntimeError("the process group could not reach the store")
                if plan.backend == "nccl":
                    torch.cuda.set_device(launch.local_rank)
                    device = torch.device("cuda", launch.local_rank)
                else:
                    device = torch.device("cpu")
                # NCCL's watchdog aborts the process when its timeout passes: keep it beyond ours.
                extra = 60.0 if plan.backend == "nccl" else 0.0
                dist.init_process_group(
                    plan.backend,
                    store=pg_store.store,
                    rank=launch.rank,
                    world_size=launch.world_size,
                    timeout=timedelta(seconds=max(1.0, budget + extra)),
                )
                self._post(Stage.GROUP)
                default = 64 if plan.backend == "nccl" else 8
                box["result"] = allreduce.run(
                    torch,
                    dist,
                    device,
                    launch.rank,
                    launch.world_size,
                    plan.backend,
                    (self.options.bandwidth_mib or default) * 2**20,
                    self.options.bandwidth_seconds,
                    self.left(COLLECTIVE_BY),
                    self._post,
                )
            except Exception as exc:
                box["error"] = _describe_error(exc)

        worker = threads.create(work, "envdoctor-collective")
        began = time.monotonic()
        worker.start()
        while worker.is_alive() and time.monotonic() < self.deadline(COLLECTIVE_BY):
            worker.join(0.2)
            if self._give_up_waiting():
                break
        self.collective_seconds = time.monotonic() - began
        result: CollectiveResult | None = box.get("result")
        if result is not None:
            return result
        if "error" in box:
            return CollectiveResult(backend=plan.backend, error=box["error"])
        last = self.stage.phrase if self.stage else "started"
        return CollectiveResult(
            backend=plan.backend,
            error=f"did not finish within {self.collective_seconds:.1f} s (this rank last {last})",
        )

    def _give_up_waiting(self) -> bool:
        """Rank 0: a rank whose heartbeat stopped will never join; others: rank 0 already reported."""
        assert self.exchange is not None
        if self.launch.rank != 0:
            return self.exchange.has(["verdict"])
        monitor = self._monitor()
        return any(monitor.dead(r) for r in range(1, self.launch.world_size))

    def _monitor(self) -> Monitor:
        if not hasattr(self, "_monitor_state"):
            assert self.exchange is not None
            self._monitor_state = Monitor(self.exchange, self.launch.world_size)
        self._monitor_state.refresh()
        return self._monitor_state

    # --- rank 0 reports ----------------------------------------------------------------------------

    def _report(self, own: CollectiveResult | None, plan: Plan) -> int:
        assert self.exchange is not None and self.info is not None
        with contextlib.suppress(ValueError):  # finish the report; the job is ending anyway
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        exchange = self.exchange
        world = self.launch.world_size
        own = own or CollectiveResult(backend=plan.backend, correct=None)
        others = range(1, world)
        while time.monotonic() < self.deadline(GATHER_BY) and not self.stopped:
            pending = [r for r in others if not exchange.has([f"result/{r}"])]
            monitor = self._monitor()
            if all(monitor.dead(r) or not exchange.has([f"info/{r}"]) for r in pending):
                break
            time.sleep(POLL * 2)
        monitor = self._monitor()
        pending = [r for r in others if not exchange.has([f"result/{r}"])]
        monitor.settle(pending, self.deadline(GATHER_BY) + 0.5)
        outcomes = [self._outcome(r, own, monitor) for r in range(world)]
        outcomes = _name_nodes(outcomes)
        facts = FleetFacts(
            mode=FleetMode.DISTRIBUTED,
            groups=self._groups(outcomes),
            world_size=world,
            ranks=tuple(outcomes),
            rendezvous=self.rendezvous,
            collective=Collective(
                attempted=plan.attempt,
                backend=plan.backend if plan.attempt else None,
                skipped_reason=plan.reason,
                waited_seconds=round(self.collective_seconds, 1),
            ),
        )
        source = f"cluster via {self.launch.kind.value}"
        report = build_report(facts, self.options.settings, source)
        self.reported.set()
        self._note("report")
        self.emit(report)
        exchange.put("verdict", str(report.exit_code).encode())
        expected = sum(1 for o in outcomes[1:] if o.state not in (RankState.NEVER_ARRIVED, RankState.DIED))
        while exchange.add("acks", 0) < expected and time.monotonic() < self.deadline(ACK_BY):
            time.sleep(POLL)
        self._note(f"exit {report.exit_code}")
        return report.exit_code

    def _outcome(self, rank: int, own: CollectiveResult, monitor: Monitor) -> RankOutcome:
        assert self.exchange is not None
        exchange = self.exchange
        info = self.info if rank == 0 else exchange.get_record(f"info/{rank}", RankInfo)
        stage = _stage(exchange.get(f"stage/{rank}"))
        if rank == 0:
            return RankOutcome(rank, RankState.FINISHED, stage, info, own)
        if info is None:
            return RankOutcome(rank, RankState.NEVER_ARRIVED)
        error = exchange.get(f"error/{rank}")
        if error is not None:
            return RankOutcome(rank, RankState.FAILED, stage, info, error=error.decode("utf-8", "replace"))
        result = exchange.get_record(f"result/{rank}", CollectiveResult)
        if result is not None:
            return RankOutcome(rank, RankState.FINISHED, stage, info, result)
        return RankOutcome(rank, RankState.DIED if monitor.dead(rank) else RankState.HUNG, stage, info)

    def _groups(self, outcomes: list[RankOutcome]) -> tuple[Any, ...]:
        """Each node's snapshot (posted by its first rank) re-diagnosed, grouped as offline."""
        from envdoctor.snapshot import SnapshotError, snapshot_from_data

        assert self.exchange is not None
        grouper = Grouper()
        done: set[str] = set()
        for outcome in sorted(outcomes, key=lambda o: o.rank):
            info = outcome.info
            if info is None or info.node in done:
                continue
            text = self.exchange.get_blob(f"snapshot/{outcome.rank}")
            error = self.exchange.get(f"checkerror/{outcome.rank}")
            if text is None and error is None:
                continue  # not this node's first rank, or it never got that far
            done.add(info.node)
            if text is not None:
                try:
                    snapshot = snapshot_from_data(json.loads(text), f"snapshot of {info.node}")
                    check = diagnose_snapshot(snapshot, self.options.settings, info.node)
                    grouper.add(stack_of(snapshot, nccl=info.nccl), check, info.node)
                    continue
                except (SnapshotError, ValueError) as exc:
                    error = str(exc).encode()
            reason = (error or b"").decode("utf-8", "replace")
            grouper.add(None, NodeCheck(exit_code=1, worst=Severity.ERROR, error=reason), info.node)
        return grouper.groups()

    # --- the other ranks --------------------------------------------------------------------------

    def _await_verdict(self) -> int:
        assert self.exchange is not None
        while time.monotonic() < self.started + self.options.timeout:
            raw = self.exchange.get("verdict")
            if raw is not None:
                with contextlib.suppress(Exception):
                    self.exchange.add("acks", 1)
                self._note(f"verdict {raw.decode()}")
                return int(raw.decode()) if raw.decode().isdigit() else EXIT_USAGE
            time.sleep(POLL * 2)
        sys.stderr.write(f"envdoctor: rank {self.launch.rank}: rank 0 gave no verdict within --timeout\n")
        return EXIT_USAGE

    def _alone(self, check: NodeCheckRun | None, error: str | None) -> int:
        """This rank cannot meet the others: report what it knows, for its own log."""
        groups: tuple[Any, ...] = ()
        info = RankInfo(rank=self.launch.rank, local_rank=self.launch.local_rank, node="this node", host="")
        if check is not None:
            snapshot, check_error = check.result(self.left(CHECK_BY))
            grouper = Grouper()
            if snapshot is not None:
                checked = diagnose_snapshot(snapshot, self.options.settings, "this node")
                grouper.add(stack_of(snapshot), checked, info.node)
            elif check_error:
                grouper.add(None, NodeCheck(exit_code=1, worst=Severity.ERROR, error=check_error), info.node)
            groups = grouper.groups()
        outcome = RankOutcome(
            rank=self.launch.rank,
            state=RankState.FAILED if error else RankState.NEVER_ARRIVED,
            info=info,
            error=error,
        )
        facts = FleetFacts(
            mode=FleetMode.DISTRIBUTED,
            groups=groups,
            world_size=self.launch.world_size,
            ranks=(outcome,),
            rendezvous=self.rendezvous,
        )
        report = build_report(facts, self.options.settings, f"rank {self.launch.rank} alone")
        self.reported.set()
        self.emit(report)
        return report.exit_code


class Monitor:
    """Rank 0's watch on the others' heartbeats; a rank is dead when its counter stopped moving for
    DEAD_AFTER seconds of watching."""

    def __init__(self, exchange: Exchange, world: int) -> None:
        self._exchange = exchange
        self._world = world
        self._seen: dict[int, tuple[bytes, float]] = {}  # rank -> (last value, when it last changed)
        self._since: dict[int, float] = {}  # rank -> when watching began
        self._last_refresh = 0.0

    def refresh(self) -> None:
        now = time.monotonic()
        if now - self._last_refresh < 0.2:
            return
        self._last_refresh = now
        ranks = [r for r in range(1, self._world) if self._exchange.has([f"beat/{r}"])]
        if not ranks:
            return
        values = self._exchange.store.multi_get([f"beat/{r}" for r in ranks])
        for rank, value in zip(ranks, values):
            value = bytes(value)
            self._since.setdefault(rank, now)
            last = self._seen.get(rank)
            if last is None or last[0] != value:
                self._seen[rank] = (value, now)

    def dead(self, rank: int) -> bool:
        last = self._seen.get(rank)
        since = self._since.get(rank)
        if last is None or since is None:
            return False
        now = time.monotonic()
        return now - since >= DEAD_AFTER and now - last[1] >= DEAD_AFTER

    def settle(self, ranks: list[int], until: float) -> None:
        """Watch `ranks` (those without a result) long enough to judge each dead or alive."""
        while time.monotonic() < until:
            self.refresh()
            now = time.monotonic()
            if all(now - self._since.get(r, now - DEAD_AFTER) >= DEAD_AFTER for r in ranks):
                return
            time.sleep(POLL)


def _stage(raw: bytes | None) -> Stage | None:
    try:
        return Stage(raw.decode()) if raw else None
    except ValueError:
        return None


def _name_nodes(outcomes: list[RankOutcome]) -> list[RankOutcome]:
    """A node is its host name, with its node rank where one host carries several (containers)."""
    node_ranks: dict[str, set[int | None]] = {}
    for outcome in outcomes:
        if outcome.info is not None:
            node_ranks.setdefault(outcome.info.host, set()).add(outcome.info.node_rank)
    named = []
    for outcome in outcomes:
        info = outcome.info
        if info is not None and len(node_ranks.get(info.host, ())) > 1:
            info = dataclasses.replace(info, node=f"{info.host}/{info.node_rank}")
            outcome = dataclasses.replace(outcome, info=info)
        named.append(outcome)
    return named
