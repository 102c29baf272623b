"""Runs inside the *target* interpreter on Windows: loads torch's DLLs the way `import torch` does.

Standard library only, old syntax (it runs in whatever Python the user has). It finds torch
without importing it, hands torch's folders to os.add_dll_directory as torch/__init__.py does,
loads c10.dll first and then the rest of torch\\lib with LoadLibraryExW and the same flags (with
torch's PATH fallback after error 126), and reports every failure with its WinError, plus the
file behind each runtime and CUDA DLL that ended up in the process. It also says where the user
scheme lives (pip --user installs there) and, read from their metadata without importing them, the
versions of the distributions named on its command line (other frameworks that load CUDA DLLs).
Records, one JSON object per line, flushed at once: {"record": "stage", "dll": ...} before each load
(a crash names the DLL), then one {"record": "dll", ...}.
"""

import json
import os
import sys

LOAD_FLAGS = 0x00001100  # LOAD_LIBRARY_SEARCH_DEFAULT_DIRS | LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR
SEM_FAILCRITICALERRORS = 0x0001
ERROR_MOD_NOT_FOUND = 126
MAX_FAILURES = 20
# Base-name prefixes of the modules worth reporting: the VC++ runtime, OpenMP, CUDA libraries.
WATCHED = (
    "msvcp140",
    "vcruntime140",
    "libiomp5md",
    "cudart",
    "cublas",
    "cudnn",
    "nvjitlink",
    "cusparse",
    "cufft",
    "curand",
    "cusolver",
    "nvrtc",
)


def emit(kind, data):
    data = dict(data)
    data["record"] = kind
    sys.stdout.write(json.dumps(data, sort_keys=True) + "\n")
    sys.stdout.flush()


def find_torch_dir():
    """torch's package folder, found without importing torch."""
    try:
        import importlib.util

        spec = importlib.util.find_spec("torch")
    except Exception:
        return None
    if spec is None or not spec.origin or not os.path.isfile(spec.origin):
        return None
    return os.path.dirname(spec.origin)


# The releases from which torch/__init__.py adds a folder to its DLL search (its own history): the
# base Python's Library\\bin under a venv from 1.6 (pytorch/pytorch#39622), the user scheme's from
# 2.3.1 (pytorch/pytorch#125109). An older torch is checked the way it loads, not the way today's does.
BASE_PREFIX_FROM = (1, 6)
USERBASE_FROM = (2, 3, 1)


def release_of(text):
    """(2, 3, 0) from "2.3.0+cu121" or "2.3.0.dev20240101"; None when there is no number."""
    parts = []
    for piece in (text or "").split("+", 1)[0].split("."):
        digits = ""
        for char in piece:
            if not char.isdigit():
                break
            digits += char
        if not digits:
            break
        parts.append(int(digits))
        if len(digits) != len(piece):
            break
    return tuple(parts) or None


def torch_release(torch_dir):
    """torch's version from torch/version.py, read as text (importing torch is what is checked)."""
    try:
        with open(os.path.join(torch_dir, "version.py")) as handle:
            for line in handle:
                if line.startswith("__version__"):
                    return release_of(line.split("=", 1)[1].strip().strip("'\""))
    except (OSError, ValueError):
        pass
    return None


def dll_directories(torch_dir, exec_prefix, base_exec_prefix, userbase, exists=os.path.exists, release=None):
    """The folders torch/__init__.py gives to os.add_dll_directory, in its order, for `release`
    (None: the current torch)."""
    candidates = [os.path.join(torch_dir, "lib"), os.path.join(exec_prefix, "Library", "bin")]
    if exec_prefix != base_exec_prefix and (release is None or release >= BASE_PREFIX_FROM):
        candidates.append(os.path.join(base_exec_prefix, "Library", "bin"))
    if userbase and (release is None or release >= USERBASE_FROM):
        candidates.append(os.path.join(userbase, "Library", "bin"))
    found = []
    for path in candidates:
        if exists(path) and path not in found:
            found.append(path)
    return found


def load_order(names):
    """c10.dll first (the base every other torch DLL needs), then the rest in glob order."""
    dlls = sorted(n for n in names if n.lower().endswith(".dll"))
    return [n for n in dlls if n.lower() == "c10.dll"] + [n for n in dlls if n.lower() != "c10.dll"]


def is_watched(path):
    name = path.replace("\\", "/").rsplit("/", 1)[-1].lower()
    return name.endswith(".dll") and any(name.startswith(prefix) for prefix in WATCHED)


def site_folders():
    found = []
    try:
        import sysconfig

        found.append(sysconfig.get_paths()["purelib"])
    except Exception:
        pass
    try:
        import site

        found.append(site.getusersitepackages())
    except Exception:
        pass
    return found


def userbase():
    try:
        import sysconfig

        return sysconfig.get_config_var("userbase")
    except Exception:
        return None


def user_site():
    try:
        import site

        return site.getusersitepackages()
    except Exception:
        return None


def distribution_versions(names):
    """{name: version} of the named distributions that are installed (Python 3.8+ metadata)."""
    try:
        from importlib import metadata
    except ImportError:
        return {}
    found = {}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except Exception:  # not installed, or unreadable metadata: not a version to report
            continue
    return found


def load_all(torch_lib, directories):
    """Load every DLL in torch\\lib as torch does; returns (attempted, loaded, failures, via_path)."""
    import ctypes
    from ctypes import wintypes

    kernel32 = ctypes.WinDLL("kernel32.dll", use_last_error=True)
    kernel32.LoadLibraryExW.argtypes = [wintypes.LPCWSTR, wintypes.HANDLE, wintypes.DWORD]
    kernel32.LoadLibraryExW.restype = wintypes.HMODULE
    kernel32.LoadLibraryW.argtypes = [wintypes.LPCWSTR]
    kernel32.LoadLibraryW.restype = wintypes.HMODULE
    kernel32.SetErrorMode.argtypes = [wintypes.UINT]
    kernel32.SetErrorMode.restype = wintypes.UINT
    keep = []
    for directory in directories:
        try:
            keep.append(os.add_dll_directory(directory))
        except (AttributeError, OSError):
            pass
    previous = kernel32.SetErrorMode(SEM_FAILCRITICALERRORS)  # no "DLL not found" dialog boxes
    attempted = 0
    loaded = 0
    failures = []
    via_path = []
    path_patched = False
    try:
        for name in load_order(os.listdir(torch_lib)):
            path = os.path.join(torch_lib, name)
            emit("stage", {"stage": "load", "dll": name})
            attempted += 1
            handle = kernel32.LoadLibraryExW(path, None, LOAD_FLAGS)
            error = 0 if handle else ctypes.get_last_error()
            if not handle and error == ERROR_MOD_NOT_FOUND:
                # torch's fallback: put its folders in front of PATH and load the legacy way.
                if not path_patched:
                    os.environ["PATH"] = ";".join(directories + [os.environ.get("PATH", "")])
                    path_patched = True
                handle = kernel32.LoadLibraryW(path)
                error = 0 if handle else ctypes.get_last_error()
                if handle:
                    via_path.append(name)
            if handle:
                loaded += 1
            elif len(failures) < MAX_FAILURES:
                failures.append(
                    {"dll": name, "winerror": error, "message": ctypes.FormatError(error).strip()}
                )
    finally:
        kernel32.SetErrorMode(previous)
    return attempted, loaded, failures, via_path


def module_paths():
    """Every module file mapped into this process, and the process image itself."""
    import ctypes
    from ctypes import wintypes

    kernel32 = ctypes.WinDLL("kernel32.dll", use_last_error=True)
    kernel32.GetCurrentProcess.restype = wintypes.HANDLE
    kernel32.K32EnumProcessModules.argtypes = [
        wintypes.HANDLE,
        ctypes.POINTER(wintypes.HMODULE),
        wintypes.DWORD,
        ctypes.POINTER(wintypes.DWORD),
    ]
    kernel32.K32EnumProcessModules.restype = wintypes.BOOL
    kernel32.GetModuleFileNameW.argtypes = [wintypes.HMODULE, wintypes.LPWSTR, wintypes.DWORD]
    kernel32.GetModuleFileNameW.restype = wintypes.DWORD
    buffer = ctypes.create_unicode_buffer(32768)
    kernel32.GetModuleFileNameW(None, buffer, 32768)
    image = buffer.value
    modules = (wintypes.HMODULE * 4096)()
    needed = wintypes.DWORD()
    paths = []
    if kernel32.K32EnumProcessModules(
        kernel32.GetCurrentProcess(), modules, ctypes.sizeof(modules), ctypes.byref(needed)
    ):
        count = min(needed.value // ctypes.sizeof(wintypes.HMODULE), 4096)
        for index in range(count):
            if kernel32.GetModuleFileNameW(modules[index], buffer, 32768):
                paths.append(buffer.value)
    return image, paths


def main(argv=None):
    names = list(sys.argv[1:] if argv is None else argv)
    report = {
        "status": "ok",
        "executable": sys.executable,
        "exec_prefix": sys.exec_prefix,
        "base_exec_prefix": getattr(sys, "base_exec_prefix", sys.exec_prefix),
        "site_packages": site_folders(),
        "userbase": userbase(),
        "user_site": user_site(),
        "distributions": distribution_versions(names),
    }
    if os.name != "nt":
        report["status"] = "not_windows"
        emit("dll", report)
        return 0
    torch_dir = find_torch_dir()
    if torch_dir is None or not os.path.isdir(os.path.join(torch_dir, "lib")):
        report["status"] = "no_torch"
        try:
            report["app_path"], _ = module_paths()
        except Exception as exc:
            report["error"] = "%s: %s" % (type(exc).__name__, exc)
        emit("dll", report)
        return 0
    torch_lib = os.path.join(torch_dir, "lib")
    release = torch_release(torch_dir)
    directories = dll_directories(
        torch_dir, sys.exec_prefix, report["base_exec_prefix"], report["userbase"], release=release
    )
    report["torch_lib"] = torch_lib
    report["dll_directories"] = directories
    # Folders today's torch searches that this older one does not: where its DLLs go missing.
    current = dll_directories(torch_dir, sys.exec_prefix, report["base_exec_prefix"], report["userbase"])
    report["missed_directories"] = [d for d in current if d not in directories]
    try:
        attempted, loaded, failures, via_path = load_all(torch_lib, directories)
    except Exception as exc:  # ctypes trouble is a fact to report, not a crash
        report["status"] = "error"
        report["error"] = "%s: %s" % (type(exc).__name__, exc)
        emit("dll", report)
        return 0
    report.update(
        {
            "status": "failed" if failures else "ok",
            "attempted": attempted,
            "loaded": loaded,
            "failures": failures,
            "via_path": via_path,
        }
    )
    try:
        image, paths = module_paths()
        report["app_path"] = image
        report["modules"] = [p for p in paths if is_watched(p)]
    except Exception as exc:
        report["error"] = "%s: %s" % (type(exc).__name__, exc)
    emit("dll", report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
