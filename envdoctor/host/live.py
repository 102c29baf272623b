"""The live host: the real machine, reached through the standard library and psutil.

subprocess (with selectors), select and shutil are imported by the methods that start children or
ask the disk: `envdoctor install` for a described machine only reads files (start-up, issue #9).
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import io
import json
import os
import platform
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from envdoctor.host.base import (
    ChildOutcome,
    CommandResult,
    DiskInfo,
    MemoryInfo,
    OwnEnvironment,
    UrlStatus,
    file_too_large,
    not_a_regular_file,
)
from envdoctor.model.types import PlatformInfo
from envdoctor.util import lifecycle, limits, threads

if TYPE_CHECKING:
    import subprocess

CHILD_DIR = Path(__file__).resolve().parent.parent / "child"
_STDERR_TAIL = 4000
# A child's output is read up to these many bytes; one that prints more (a --python that is
# /usr/bin/yes) is stopped there. The torch child's report is a few kilobytes.
STDOUT_LIMIT = 8 * 1024 * 1024
_STDERR_KEEP = 256 * 1024  # of stderr only the end matters
_DRAIN = 0.5  # seconds to collect what a killed child left in its pipes


class LiveHost:
    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._env = dict(os.environ if environ is None else environ)

    @property
    def env(self) -> Mapping[str, str]:
        return self._env

    @property
    def own_python(self) -> str:
        return sys.executable

    def own_environment(self) -> OwnEnvironment:
        import importlib.util

        try:
            # find_spec on a top-level name only searches sys.path: torch is not imported.
            has_torch = importlib.util.find_spec("torch") is not None
        except (ImportError, ValueError):
            has_torch = False
        return OwnEnvironment(prefix=sys.prefix, has_torch=has_torch)

    def platform(self) -> PlatformInfo:
        return PlatformInfo(
            system=platform.system(),
            release=platform.release(),
            version=platform.version(),
            machine=platform.machine(),
        )

    def cpu_count(self) -> int | None:
        return os.cpu_count()

    def memory(self) -> MemoryInfo | None:
        try:
            import psutil

            vm = psutil.virtual_memory()
        except Exception:  # psutil missing or unsupported platform: the fact is simply unknown
            return None
        return MemoryInfo(total_bytes=int(vm.total), available_bytes=int(vm.available))

    def disk_usage(self, path: str) -> DiskInfo | None:
        import shutil

        try:
            usage = shutil.disk_usage(path)
        except OSError:
            return None
        return DiskInfo(total_bytes=usage.total, free_bytes=usage.free)

    def cwd(self) -> str:
        try:
            return os.getcwd()
        except OSError:  # deleted under us: "." finds nothing, as there is nothing
            return os.curdir

    def which(self, name: str) -> str | None:
        import shutil

        return shutil.which(name, path=self._env.get("PATH"))

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def read_text(self, path: str, max_bytes: int | None = None, strict: bool = False) -> str:
        errors = "strict" if strict else "replace"
        # Regular files only, size-capped (4 MiB unless the caller asks for less): a FIFO or
        # /dev/zero at a config path is an OSError (that file's status), never a hang.
        limit = limits.CONFIG_FILE_LIMIT if max_bytes is None else max_bytes
        try:
            data = limits.read_bytes(path, limit)
        except limits.TooLarge:
            raise file_too_large(path, limit) from None
        except limits.NotRegularFile as exc:
            # The kind stays in the message: pip and uv wait forever on a FIFO, not on a socket.
            raise not_a_regular_file(path, exc.strerror) from None
        # As open() in text mode would: universal newlines, undecodable bytes replaced.
        text = data.decode("utf-8", errors=errors)
        return text.replace("\r\n", "\n").replace("\r", "\n")

    def list_dir(self, path: str) -> tuple[str, ...]:
        return tuple(sorted(os.listdir(path)))

    def run(self, argv: Sequence[str], timeout: float) -> CommandResult:
        try:
            proc = _start(argv, self._env)
        except OSError as exc:
            return CommandResult(returncode=None, start_error=_describe_start_error(exc))
        ran = _communicate(proc, timeout)
        if ran.timed_out:
            return CommandResult(returncode=None, stdout=ran.stdout, stderr=ran.stderr, timed_out=True)
        return CommandResult(
            returncode=None if ran.cut else proc.returncode,
            stdout=ran.stdout,
            stderr=ran.stderr,
            start_error=f"printed more than {STDOUT_LIMIT // (1024 * 1024)} MiB" if ran.cut else None,
        )

    def stream(
        self,
        argv: Sequence[str],
        timeout: float,
        on_line: Callable[[str], None],
        env: Mapping[str, str] | None = None,
    ) -> CommandResult:
        import subprocess

        try:
            proc = _start(argv, {**self._env, **(env or {})}, merge_stderr=True)
        except OSError as exc:
            return CommandResult(returncode=None, start_error=_describe_start_error(exc))
        tail: collections.deque[str] = collections.deque(maxlen=200)

        def pump() -> None:
            assert proc.stdout is not None
            for line in io.TextIOWrapper(proc.stdout, encoding="utf-8", errors="replace"):
                tail.append(line)
                on_line(line)

        reader = threads.start(pump, "stream-output")
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _end_group(proc)
            reader.join(5)
            return CommandResult(returncode=None, stdout="".join(tail), timed_out=True)
        except KeyboardInterrupt:
            _end_group(proc)  # the whole group: pip's own children (builds) too
            reader.join(5)
            raise
        reader.join(5)
        lifecycle.forget(proc)
        return CommandResult(returncode=proc.returncode, stdout="".join(tail))

    def python_json(self, interpreter: str, script: str, args: Sequence[str], timeout: float) -> ChildOutcome:
        if script == "python_info.py" and not args and _is_this_process(interpreter, self._env):
            return _python_info_here()
        now = time.perf_counter()
        ours = self._env == os.environ  # an early child has this process's environment
        early = _take_early(interpreter, script, tuple(args), now + timeout) if ours else None
        if early is not None:
            proc, started, own_clock = early
        else:
            started, own_clock = now, True
            try:
                proc = _start(_child_argv(interpreter, script, args), _child_env(self._env))
            except OSError as exc:
                return ChildOutcome(records=(), returncode=None, start_error=_describe_start_error(exc))
        # A child started early with these very arguments counts its timeout from its own start; one
        # adopted for a shorter budget (see _take_early) has until this call's own limit.
        end = started + timeout if own_clock else now + timeout
        timeout = max(0.0, end - time.perf_counter())
        ran = _communicate(proc, timeout)
        timed_out = ran.timed_out
        code = proc.returncode
        died_of = -code if (code is not None and code < 0) else None
        if ran.cut:  # stopped for printing without end: not a child that ran to its end
            return ChildOutcome(
                records=parse_records(ran.stdout),
                returncode=None,
                start_error=f"printed more than {STDOUT_LIMIT // (1024 * 1024)} MiB without finishing",
                stderr_tail=ran.stderr[-_STDERR_TAIL:],
                seconds=time.perf_counter() - started,
            )
        return ChildOutcome(
            records=parse_records(ran.stdout),
            returncode=None if timed_out else code,
            signal=None if timed_out else died_of,
            timed_out=timed_out,
            stderr_tail=ran.stderr[-_STDERR_TAIL:],
            seconds=time.perf_counter() - started,
        )

    def realpath(self, path: str) -> str:
        try:
            return os.path.realpath(path)
        except (OSError, ValueError):
            return path

    def registry_values(self, key: str, view: int) -> Mapping[str, str | int] | None:
        try:
            import winreg
        except ImportError:  # not Windows: there is no registry to read
            return None
        return _read_registry(winreg, key, view)

    def file_version(self, path: str) -> str | None:
        if os.name != "nt":
            return None
        try:
            return _windows_file_version(path)
        except (OSError, AttributeError, ValueError):  # no version resource, or an odd file
            return None

    def url_status(self, url: str, timeout: float) -> UrlStatus:
        return _url_status(url, timeout, self._env)

    def home(self) -> str | None:
        # What expanduser("~") gives, read from this host's environment: pip finds its legacy user
        # file that way. Windows Python >= 3.8 uses USERPROFILE and ignores HOME.
        if os.name == "nt":
            drive_path = self._env.get("HOMEDRIVE", "") + self._env.get("HOMEPATH", "")
            return self._env.get("USERPROFILE") or drive_path or None
        home = self._env.get("HOME")
        if home:
            return home
        try:
            import pwd

            return pwd.getpwuid(os.getuid()).pw_dir or None
        except (ImportError, KeyError):
            return None


def _is_this_process(interpreter: str, environ: Mapping[str, str]) -> bool:
    """`interpreter` started with `environ` would be this very process: the same path (a venv's
    python is a link to the base one, so paths are compared unresolved) and the same variables
    (PYTHONHOME and PYTHONPATH change what an interpreter says about itself)."""
    return interpreter == sys.executable and environ == os.environ and not sys.flags.ignore_environment


def _python_info_here() -> ChildOutcome:
    """python_info.py's answer for the running interpreter, without starting it again: a child
    costs `install` as much as the rest of its start-up."""
    import importlib

    started = time.perf_counter()
    # Imported by name: the child scripts keep old, unannotated syntax that mypy does not check.
    python_info: Any = importlib.import_module("envdoctor.child.python_info")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = int(python_info.main())
    return ChildOutcome(
        records=parse_records(out.getvalue()), returncode=code, seconds=time.perf_counter() - started
    )


def _child_argv(interpreter: str, script: str, args: Sequence[str]) -> list[str]:
    return [interpreter, "-B", str(CHILD_DIR / script), *args]


def _child_env(environ: Mapping[str, str]) -> dict[str, str]:
    env = dict(environ)
    # The child's records are ASCII JSON; this keeps a legacy console code page from mangling
    # any message text torch prints on stderr.
    env.setdefault("PYTHONIOENCODING", "utf-8")
    # Read-only: importing torch must not write __pycache__/*.pyc into the examined environment
    # (uv installs without bytecode). -B says the same on the command line.
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


# Children started before the probes ran (see start_early), by (interpreter, script, args).
_EARLY: dict[tuple[str, str, tuple[str, ...]], tuple[subprocess.Popen[bytes], float]] = {}


def start_early(interpreter: str, script: str, args: Sequence[str]) -> None:
    """Start a child script now, for a later python_json with exactly these arguments to adopt.

    The torch child is the floor of a check (about a second of importing torch); starting it
    before envdoctor has even imported its CLI hides that start-up behind it. A child nobody
    adopts is killed at exit. Failure to start is ignored here: python_json will report it.
    """
    key = (interpreter, script, tuple(args))
    if key in _EARLY:
        return
    try:
        proc = _start(_child_argv(interpreter, script, args), _child_env(os.environ))
    except OSError:
        return
    if not _EARLY:
        atexit.register(discard_early)
    _EARLY[key] = (proc, time.perf_counter())


# A child script's own time budget, in seconds from its start (torch_probe.py), and how long before
# its end the child has reported (torch_probe.py's EXIT_MARGIN; tests hold the two equal).
_BUDGET = "--budget"
_REPORTED_BEFORE_BUDGET_ENDS = 1.0
# What an adopted child keeps of that margin at least, to exit once it has reported: it started a
# moment after the run's clock, so its budget ends that moment later than a fresh child's would.
_ADOPTION_ROOM = 0.5


def _take_early(
    interpreter: str, script: str, args: tuple[str, ...], stop_by: float
) -> tuple[subprocess.Popen[bytes], float, bool] | None:
    """The early child for this call: one with exactly these arguments (its timeout counts from its
    own start), else one that differs only in a `--budget` by whose end, less the child's own margin,
    this call's `stop_by` is not yet reached. The second case is a check whose start-up ate into its
    deadline: the probe then asks for a shorter budget than the early start gave (both end at the
    run's deadline), and starting torch a second time would cost more than it saves."""
    exact = _EARLY.pop((interpreter, script, args), None)
    if exact is not None:
        return exact[0], exact[1], True
    for key, (proc, started) in list(_EARLY.items()):  # a signal's discard_early may empty it meanwhile
        own_budget = _budget_of(key[2])
        if key[:2] != (interpreter, script) or own_budget is None or _budget_of(args) is None:
            continue
        reported_by = started + own_budget - _REPORTED_BEFORE_BUDGET_ENDS
        fits = reported_by + _ADOPTION_ROOM <= stop_by
        same = _without_budget(key[2]) == _without_budget(args)
        if same and fits and _EARLY.pop(key, None) is not None:
            return proc, started, False
    return None


def _budget_of(args: tuple[str, ...]) -> float | None:
    if _BUDGET not in args[:-1]:
        return None
    try:
        return float(args[args.index(_BUDGET) + 1])
    except ValueError:
        return None


def _without_budget(args: tuple[str, ...]) -> tuple[str, ...]:
    at = args.index(_BUDGET)
    return args[:at] + args[at + 2 :]


def discard_early() -> None:
    """Kill the early children no probe adopted (say, `--skip torch` came from a config file)."""
    while _EARLY:
        _, (proc, _) = _EARLY.popitem()
        if proc.poll() is None:
            lifecycle.kill_tree(proc)
        lifecycle.forget(proc)


def parse_records(stdout: str) -> tuple[Mapping[str, Any], ...]:
    """Every stdout line that is a JSON object; anything else a library printed is skipped."""
    records = []
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            records.append(value)
    return tuple(records)


def _start(
    argv: Sequence[str], env: Mapping[str, str], merge_stderr: bool = False
) -> subprocess.Popen[bytes]:
    import subprocess

    extra: dict[str, Any] = {}
    if os.name == "posix":
        # A session of its own lets a timeout kill the whole tree, grandchildren included; the
        # terminal's Ctrl-C then no longer reaches it, so lifecycle kills it on every way out.
        extra["start_new_session"] = True
    else:
        # Its own process group, so that Ctrl-C reaches envdoctor, which then ends the program.
        extra["creationflags"] = getattr(subprocess, "CREATE_NO_WINDOW", 0) | (
            getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0) if merge_stderr else 0
        )
    lifecycle.adopt_orphans()  # the console entry point ends what its children leave behind
    return lifecycle.track(
        lambda: subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
            env=dict(env),
            **extra,
        )
    )


class _Ran:
    """What _communicate collected: decoded output, and whether the child was stopped."""

    def __init__(self, stdout: str, stderr: str, timed_out: bool, cut: bool) -> None:
        self.stdout = stdout
        self.stderr = stderr
        self.timed_out = timed_out
        self.cut = cut


class _Reader(threading.Thread):
    """Reads one pipe to its end, keeping at most `keep` bytes (the first, or the last)."""

    def __init__(self, pipe: Any, keep: int, tail: bool, on_overflow: Any) -> None:
        super().__init__(daemon=True)
        self.pipe = pipe
        self.keep = keep
        self.tail = tail
        self.on_overflow = on_overflow
        self.data = bytearray()
        self.overflowed = False

    def run(self) -> None:
        try:
            while True:
                chunk = self.pipe.read1(65536) if hasattr(self.pipe, "read1") else self.pipe.read(65536)
                if not chunk:
                    return
                self.data += chunk
                if len(self.data) > self.keep:
                    if self.tail:
                        del self.data[: len(self.data) - self.keep]
                    else:
                        del self.data[self.keep :]
                        self.overflowed = True
                        self.on_overflow()
                        return
        except (OSError, ValueError):  # the pipe was closed under us
            return


def _wait(proc: subprocess.Popen[bytes], timeout: float) -> None:
    """proc.wait(timeout=...) without its polling, which sleeps up to 50 ms at a time and so
    notices a child's end that much late (every child of every command pays it): on Linux the
    child's pidfd becomes readable the moment it ends. Elsewhere, Popen's own wait."""
    import select
    import subprocess

    try:
        pidfd = os.pidfd_open(proc.pid)  # type: ignore[attr-defined,unused-ignore]
    except (AttributeError, OSError):  # not Linux >= 5.3, or the child is gone already
        proc.wait(timeout=timeout)
        return
    try:
        ended, _, _ = select.select([pidfd], [], [], max(0.0, timeout))
    finally:
        os.close(pidfd)
    if not ended:
        raise subprocess.TimeoutExpired(proc.args, timeout)
    proc.wait(timeout=_DRAIN)  # it has ended: this reaps it at once


def _communicate(proc: subprocess.Popen[bytes], timeout: float) -> _Ran:
    """Wait up to `timeout` for the child, reading bounded output; kill its tree on timeout or
    when stdout passes STDOUT_LIMIT. Never waits on a grandchild that keeps a pipe open."""
    import subprocess

    stopped = threading.Event()

    def overflow() -> None:
        stopped.set()
        lifecycle.kill_tree(proc)

    out = _Reader(proc.stdout, STDOUT_LIMIT, tail=False, on_overflow=overflow)
    err = _Reader(proc.stderr, _STDERR_KEEP, tail=True, on_overflow=overflow)
    out.start()
    err.start()
    timed_out = False
    try:
        _wait(proc, timeout)
    except subprocess.TimeoutExpired:
        timed_out = not stopped.is_set()
        lifecycle.kill_tree(proc)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=_DRAIN)
    for reader in (out, err):
        reader.join(_DRAIN)
    if out.is_alive() or err.is_alive():  # a grandchild holds the pipe: it goes with the group
        lifecycle.kill_tree(proc)
        for reader in (out, err):
            reader.join(_DRAIN)
    if proc.returncode is not None:
        lifecycle.forget(proc)
    for pipe in (proc.stdout, proc.stderr):
        try:
            if pipe is not None and not (out.is_alive() or err.is_alive()):
                pipe.close()
        except OSError:
            pass
    return _Ran(
        bytes(out.data).decode("utf-8", "replace"),
        bytes(err.data).decode("utf-8", "replace"),
        timed_out,
        out.overflowed,
    )


def _end_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill a streamed program's process group; its output pipe is left to the thread reading it."""
    import subprocess

    lifecycle.kill_tree(proc)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)
    lifecycle.forget(proc)


def _describe_start_error(exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return "not found"
    if isinstance(exc, PermissionError):
        return "permission denied"
    return f"{type(exc).__name__}: {exc.strerror or exc}"


def _read_registry(winreg: Any, key: str, view: int) -> dict[str, str | int] | None:
    hive_name, _, subkey = key.partition("\\")
    hives = {
        "HKLM": winreg.HKEY_LOCAL_MACHINE,
        "HKEY_LOCAL_MACHINE": winreg.HKEY_LOCAL_MACHINE,
        "HKCU": winreg.HKEY_CURRENT_USER,
        "HKEY_CURRENT_USER": winreg.HKEY_CURRENT_USER,
    }
    hive = hives.get(hive_name.upper())
    if hive is None:
        raise ValueError(f"unknown registry hive in {key!r}")
    # Both views are asked for explicitly: a 32-bit Python would otherwise be redirected to
    # WOW6432Node without saying so.
    access = winreg.KEY_READ | (winreg.KEY_WOW64_64KEY if view == 64 else winreg.KEY_WOW64_32KEY)
    try:
        handle = winreg.OpenKey(hive, subkey, 0, access)
    except FileNotFoundError:
        return None
    values: dict[str, str | int] = {}
    with handle:
        index = 0
        while True:
            try:
                name, value, kind = winreg.EnumValue(handle, index)
            except OSError:  # no more values
                break
            index += 1
            text = kind in (winreg.REG_SZ, winreg.REG_EXPAND_SZ) and isinstance(value, str)
            number = kind == winreg.REG_DWORD and isinstance(value, int)
            if text or number:
                values[name] = value
    return values


def _windows_file_version(path: str) -> str | None:
    """The fixed file version (VS_FIXEDFILEINFO) of a PE file, read with version.dll."""
    import ctypes
    from ctypes import wintypes

    version = ctypes.WinDLL("version", use_last_error=True)  # type: ignore[attr-defined]
    version.GetFileVersionInfoSizeW.argtypes = [wintypes.LPCWSTR, ctypes.POINTER(wintypes.DWORD)]
    version.GetFileVersionInfoSizeW.restype = wintypes.DWORD
    version.GetFileVersionInfoW.argtypes = [wintypes.LPCWSTR, wintypes.DWORD, wintypes.DWORD, ctypes.c_void_p]
    version.GetFileVersionInfoW.restype = wintypes.BOOL
    version.VerQueryValueW.argtypes = [
        ctypes.c_void_p,
        wintypes.LPCWSTR,
        ctypes.POINTER(ctypes.c_void_p),
        ctypes.POINTER(wintypes.UINT),
    ]
    version.VerQueryValueW.restype = wintypes.BOOL
    size = version.GetFileVersionInfoSizeW(path, None)
    if not size:
        return None
    buffer = ctypes.create_string_buffer(size)
    if not version.GetFileVersionInfoW(path, 0, size, buffer):
        return None
    pointer = ctypes.c_void_p()
    length = wintypes.UINT()
    if not version.VerQueryValueW(buffer, "\\", ctypes.byref(pointer), ctypes.byref(length)):
        return None
    if length.value < 13 * 4 or not pointer.value:
        return None
    # VS_FIXEDFILEINFO: signature, struct version, file version MS, file version LS, ...
    fields = ctypes.cast(pointer, ctypes.POINTER(ctypes.c_uint32 * 13)).contents
    if fields[0] != 0xFEEF04BD:
        return None
    ms, ls = fields[2], fields[3]
    return f"{ms >> 16}.{ms & 0xFFFF}.{ls >> 16}.{ls & 0xFFFF}"


def _url_status(url: str, timeout: float, environ: Mapping[str, str]) -> UrlStatus:
    """urllib, with the proxies this host's environment names (as pip uses them); the body is not read.

    Asked without the URL's credentials: urllib cannot send them (it takes `user:token@host` for a
    host and a port, and its error names the token), and a 401 or 403 proves the host answers."""
    import http.client
    import ssl
    import urllib.error
    import urllib.request

    from envdoctor.util.urls import host_problem, opener_for, split_credentials

    bare = split_credentials(url).url
    problem = host_problem(bare)
    if problem is not None:
        return UrlStatus(None, problem)
    request = urllib.request.Request(bare, headers={"User-Agent": "envdoctor"})
    try:
        with opener_for(bare, environ).open(request, timeout=timeout) as response:
            return UrlStatus(int(response.status))
    except urllib.error.HTTPError as exc:  # an answer all the same: the server is there
        return UrlStatus(exc.code)
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, ssl.SSLError):  # it answered; pip may trust what urllib does not
            return UrlStatus(0, f"TLS: {exc.reason}")
        reason = (
            exc.reason.strerror if isinstance(exc.reason, OSError) and exc.reason.strerror else exc.reason
        )
        return UrlStatus(None, str(reason))
    except http.client.HTTPException as exc:  # a malformed answer: something is there
        return UrlStatus(0, f"not an HTTP answer ({type(exc).__name__})")
    except (OSError, ValueError) as exc:  # timeouts, resets, a malformed URL
        return UrlStatus(None, str(exc) or type(exc).__name__)
