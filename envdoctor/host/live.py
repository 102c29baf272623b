"""The live host: the real machine, reached through the standard library and psutil."""

from __future__ import annotations

import atexit
import json
import os
import platform
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

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
from envdoctor.model import PlatformInfo

CHILD_DIR = Path(__file__).resolve().parent.parent / "child"
_STDERR_TAIL = 4000


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
        try:
            usage = shutil.disk_usage(path)
        except OSError:
            return None
        return DiskInfo(total_bytes=usage.total, free_bytes=usage.free)

    def cwd(self) -> str:
        return os.getcwd()

    def which(self, name: str) -> str | None:
        return shutil.which(name, path=self._env.get("PATH"))

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def read_text(self, path: str, max_bytes: int | None = None) -> str:
        if max_bytes is None:
            with open(path, encoding="utf-8", errors="replace") as handle:
                return handle.read()
        # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
        descriptor = os.open(path, flags)
        with os.fdopen(descriptor, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise not_a_regular_file(path)
            data = handle.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise file_too_large(path, max_bytes)
        # As open() in text mode would: universal newlines, undecodable bytes replaced.
        text = data.decode("utf-8", errors="replace")
        return text.replace("\r\n", "\n").replace("\r", "\n")

    def list_dir(self, path: str) -> tuple[str, ...]:
        return tuple(sorted(os.listdir(path)))

    def run(self, argv: Sequence[str], timeout: float) -> CommandResult:
        try:
            proc = _start(argv, self._env)
        except OSError as exc:
            return CommandResult(returncode=None, start_error=_describe_start_error(exc))
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            out, err = _kill(proc)
            return CommandResult(returncode=None, stdout=out, stderr=err, timed_out=True)
        return CommandResult(returncode=proc.returncode, stdout=out, stderr=err)

    def python_json(self, interpreter: str, script: str, args: Sequence[str], timeout: float) -> ChildOutcome:
        early = _EARLY.pop((interpreter, script, tuple(args)), None) if self._env == os.environ else None
        if early is not None:
            proc, started = early
        else:
            started = time.perf_counter()
            try:
                proc = _start(_child_argv(interpreter, script, args), _child_env(self._env))
            except OSError as exc:
                return ChildOutcome(records=(), returncode=None, start_error=_describe_start_error(exc))
        # A child started early counts its timeout from its own start.
        timeout = max(0.0, started + timeout - time.perf_counter())
        timed_out = False
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            out, err = _kill(proc)
            timed_out = True
        code = proc.returncode
        died_of = -code if (code is not None and code < 0) else None
        return ChildOutcome(
            records=parse_records(out),
            returncode=None if timed_out else code,
            signal=None if timed_out else died_of,
            timed_out=timed_out,
            stderr_tail=err[-_STDERR_TAIL:],
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
        return _url_status(url, timeout)

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


def _child_argv(interpreter: str, script: str, args: Sequence[str]) -> list[str]:
    return [interpreter, str(CHILD_DIR / script), *args]


def _child_env(environ: Mapping[str, str]) -> dict[str, str]:
    env = dict(environ)
    # The child's records are ASCII JSON; this keeps a legacy console code page from mangling
    # any message text torch prints on stderr.
    env.setdefault("PYTHONIOENCODING", "utf-8")
    return env


# Children started before the probes ran (see start_early), by (interpreter, script, args).
_EARLY: dict[tuple[str, str, tuple[str, ...]], tuple[subprocess.Popen[str], float]] = {}


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


def discard_early() -> None:
    """Kill the early children no probe adopted (say, `--skip torch` came from a config file)."""
    while _EARLY:
        _, (proc, _) = _EARLY.popitem()
        if proc.poll() is None:
            _kill(proc)


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


def _start(argv: Sequence[str], env: Mapping[str, str]) -> subprocess.Popen[str]:
    extra: dict[str, Any] = {}
    if os.name == "posix":
        # A session of its own lets a timeout kill the whole tree, grandchildren included.
        extra["start_new_session"] = True
    else:
        extra["creationflags"] = getattr(subprocess, "CREATE_NO_WINDOW", 0)
    return subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        errors="replace",
        env=dict(env),
        **extra,
    )


def _kill(proc: subprocess.Popen[str]) -> tuple[str, str]:
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except OSError:
        pass
    try:
        out, err = proc.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        return "", ""
    return out or "", err or ""


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


def _url_status(url: str, timeout: float) -> UrlStatus:
    """urllib, with the proxies the environment names (as pip uses them); the body is not read."""
    import ssl
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, headers={"User-Agent": "envdoctor"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
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
    except (OSError, ValueError) as exc:  # timeouts, resets, a malformed URL
        return UrlStatus(None, str(exc) or type(exc).__name__)
