"""Runs inside the *target* interpreter: imports torch once, reports the build, then smoke-tests it.

Standard library only (plus torch), and old syntax, because it runs in whatever Python the user
has. Each record is one JSON object on its own line, flushed at once, so that a crash or hang
part-way still leaves the records printed before it. Records: {"record": "stage", ...} before each
risky step, one {"record": "torch", ...} with the build, then "companion_start" / "companion" around
the load check of each installed companion (torchvision, torchaudio), then the smoke test's records:
"smoke" (start/end), "smoke_device" (start/end), and "step_start" before / "step" after each step.
A "step_start" (or "companion_start") without its closing record names the step that hung or crashed.

Arguments: --no-smoke, --smoke-size N (matrix size), --budget SECONDS (the parent's timeout).
"""

import faulthandler
import json
import math
import os
import platform
import re
import sys
import time
import traceback
import warnings


def emit(kind, data):
    data = dict(data)
    data["record"] = kind
    sys.stdout.write(json.dumps(data, default=str, sort_keys=True) + "\n")
    sys.stdout.flush()


def stage(name):
    emit("stage", {"stage": name, "t": time.time()})


def dist_version(name):
    try:
        from importlib import metadata  # Python 3.8+
    except ImportError:
        return None
    try:
        return metadata.version(name)
    except Exception:
        return None


COMPANIONS = ("torchvision", "torchaudio")


def companions():
    found = []
    for name in COMPANIONS:
        version = dist_version(name)
        if version is not None:
            found.append({"name": name, "version": version})
    return found


# ---------------------------------------------------------------------------------------------
# Installed distributions that depend on torch: their Requires-Dist lines, read from metadata
# files only (no import), so a package built for another torch is named without loading it.
# envdoctor parses the requirements (with `packaging`); here they are only picked out by name.

# The distributions whose requirements matter: torch itself, its companions and its compiler.
WATCHED = ("torch", "torchvision", "torchaudio", "triton")
REQUIREMENT_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def watched(name):
    key = normalize(name)
    return key in WATCHED or key.startswith("pytorch-triton")  # ROCm/XPU/nightly triton builds


def metadata_headers(text):
    """Name, Version and the Requires-Dist values of a METADATA / PKG-INFO text (its header block)."""
    name = version = None
    requires = []
    for line in text.splitlines():
        if not line.strip():
            break  # the body (the long description) starts after the first blank line
        if line[0] in " \t":
            continue  # a folded continuation of the previous header
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key = key.strip().lower()
        if key == "name":
            name = value.strip()
        elif key == "version":
            version = value.strip()
        elif key == "requires-dist":
            requires.append(value.strip())
    return name, version, requires


def read_dist_file(dist, name):
    try:
        return dist.read_text(name)
    except Exception:
        return None


def origin(dist):
    """Who installed a distribution (INSTALLER) and, for a direct install, from where (PEP 610)."""
    found = {}
    installer = read_dist_file(dist, "INSTALLER")
    if installer and installer.strip():
        found["installer"] = installer.strip()[:40]
    direct = read_dist_file(dist, "direct_url.json")
    if direct:
        try:
            url = json.loads(direct).get("url")
        except (ValueError, AttributeError):
            url = None
        if isinstance(url, str):
            found["source"] = url[:500]
    return found


def distributions(known=(), candidates=None):
    """Each installed distribution that requires a watched one, or is one, and every nvidia-*
    wheel: None before Python 3.8. torch's own entry keeps its nvidia-* requirements too. The
    distributions that may be torch extensions (they require torch, or `known` names them) are
    appended to `candidates` as (dist, name, version, requires torch), examined after the import."""
    try:
        from importlib import metadata
    except ImportError:
        return None
    found = []
    seen = set()
    try:
        everything = list(metadata.distributions())
    except Exception:
        return None
    for dist in everything:
        text = read_dist_file(dist, "METADATA") or read_dist_file(dist, "PKG-INFO") or ""
        name, version, requires = metadata_headers(text)
        if not name or not version:
            continue
        key = normalize(name)
        if key in seen:
            continue  # a copy further down sys.path: the first one is the one imported
        seen.add(key)
        if not requires and read_dist_file(dist, "requires.txt"):
            try:
                requires = list(dist.requires or ())  # an egg-info folder
            except Exception:
                requires = []
        pins = []
        requires_torch = False
        for requirement in requires:
            match = REQUIREMENT_NAME.match(requirement)
            if not match:
                continue
            required = normalize(match.group(1))
            requires_torch = requires_torch or required == "torch"
            if (
                required in WATCHED
                or required.startswith("pytorch-triton")
                or (key == "torch" and required.startswith("nvidia-"))
            ):
                pins.append(requirement[:300])
        nvidia = key.startswith("nvidia-")
        if (
            candidates is not None
            and key not in NOT_EXTENSIONS
            and not nvidia
            and not key.startswith("pytorch-triton")
            # No requirements at all: a setup.py build of a cpp_extension (trilinear, gymtorch)
            # declares none; its compiled files tell (only the torch-linked ones are reported).
            and (requires_torch or key in known or not requires)
        ):
            candidates.append((dist, name, version, requires_torch or key in known))
        if not pins and not watched(name) and not nvidia:
            continue
        entry = {"name": name, "version": version, "requires": pins}
        if watched(name):
            entry.update(origin(dist))
        found.append(entry)
    return found


def short_error(exc):
    return {"type": type(exc).__name__, "message": str(exc)[:4000]}


def collect(torch, info, errors):
    version = getattr(torch, "__version__", None)
    info["version"] = str(version) if version is not None else None
    info["location"] = getattr(torch, "__file__", None)
    torch_version = getattr(torch, "version", None)
    info["cuda"] = getattr(torch_version, "cuda", None)
    abi = getattr(getattr(torch, "_C", None), "_GLIBCXX_USE_CXX11_ABI", None)
    info["cxx11_abi"] = abi if isinstance(abi, bool) else None
    info["hip"] = getattr(torch_version, "hip", None)
    info["git_version"] = getattr(torch_version, "git_version", None)
    try:
        import torch.backends.cudnn as cudnn

        info["cudnn"] = cudnn.version() if cudnn.is_available() else None
    except Exception as exc:
        errors.append({"step": "cudnn", "error": short_error(exc)})
    try:
        info["arch_list"] = list(torch.cuda.get_arch_list())
    except Exception as exc:
        errors.append({"step": "arch_list", "error": short_error(exc)})
    stage("cuda_available")
    try:
        info["cuda_available"] = bool(torch.cuda.is_available())
    except Exception as exc:
        errors.append({"step": "is_available", "error": short_error(exc)})
    try:
        info["device_count"] = int(torch.cuda.device_count())
    except Exception as exc:
        errors.append({"step": "device_count", "error": short_error(exc)})
    devices = []
    if info.get("cuda_available"):
        for index in range(info.get("device_count") or 0):
            device = {"index": index}
            try:
                device["name"] = torch.cuda.get_device_name(index)
                major, minor = torch.cuda.get_device_capability(index)
                device["capability"] = [int(major), int(minor)]
                device["total_memory_bytes"] = int(torch.cuda.get_device_properties(index).total_memory)
            except Exception as exc:
                errors.append({"step": "device %d" % index, "error": short_error(exc)})
            devices.append(device)
    info["devices"] = devices
    try:
        mps = getattr(torch.backends, "mps", None)
        info["mps_available"] = bool(mps.is_available()) if mps is not None else None
    except Exception as exc:
        errors.append({"step": "mps", "error": short_error(exc)})


# ---------------------------------------------------------------------------------------------
# AMD and Intel GPUs: the gfx target of each ROCm device (what the build's arch list must hold), and
# Intel's XPU devices (torch.xpu, from torch 2.5). Additive: older parents ignore these keys.


def gfx_name(value):
    """ "gfx90a" from gcnArchName "gfx90a:sramecc+:xnack-"; None for anything else."""
    text = str(value or "").split(":", 1)[0].strip()
    return text if re.match(r"^gfx[0-9a-f]{3,4}$", text) else None


def collect_vendors(torch, info, errors):
    torch_version = getattr(torch, "version", None)
    xpu_version = getattr(torch_version, "xpu", None)
    info["xpu"] = str(xpu_version) if xpu_version else None
    gfx = []
    if info.get("hip") and info.get("cuda_available"):
        for device in info.get("devices") or ():
            try:
                gfx.append(gfx_name(torch.cuda.get_device_properties(device["index"]).gcnArchName))
            except Exception as exc:
                errors.append({"step": "gfx %d" % device["index"], "error": short_error(exc)})
                gfx.append(None)
    info["gfx_targets"] = gfx
    xpu = getattr(torch, "xpu", None)
    if xpu is None:
        return
    stage("xpu_available")
    try:
        info["xpu_available"] = bool(xpu.is_available())
    except Exception as exc:
        errors.append({"step": "xpu_available", "error": short_error(exc)})
        return
    devices = []
    if info["xpu_available"]:
        try:
            count = int(xpu.device_count())
        except Exception as exc:
            errors.append({"step": "xpu_device_count", "error": short_error(exc)})
            count = 0
        for index in range(count):
            device = {"index": index}
            try:
                properties = xpu.get_device_properties(index)
                device["name"] = str(getattr(properties, "name", "") or "") or None
                device["total_memory_bytes"] = int(getattr(properties, "total_memory", 0) or 0) or None
            except Exception as exc:
                errors.append({"step": "xpu device %d" % index, "error": short_error(exc)})
            devices.append(device)
    info["xpu_devices"] = devices


# ---------------------------------------------------------------------------------------------
# Companion load checks: load torchvision's / torchaudio's compiled extension beside this torch as
# the packages themselves do, and prove that the operators are registered by running one. The rest
# of the package is not imported on the way (torchvision's __init__ imports torch._dynamo: seconds);
# when the operator is missing, the user's own `import torchvision` is replayed for its exact error.

COMPANION_TIMEOUT = 20.0  # a healthy import and one tiny op take well under a second
NMS_BOXES = [[0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 0.9], [2.0, 2.0, 3.0, 3.0]]
NMS_SCORES = [0.9, 0.8, 0.7]
NMS_KEEP = [0, 2]  # the second box overlaps the first (IoU 0.9) and scores lower


def version_file(package_dir):
    """__version__ from a package's version.py, read as text: it holds the build's variant label
    ("0.28.0+cu130") even when the package itself cannot be imported."""
    try:
        with open(os.path.join(package_dir, "version.py")) as handle:
            text = handle.read(4000)
    except (IOError, OSError):
        return None
    match = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", text, re.M)
    return match.group(1) if match else None


def package_dir(name):
    try:
        import importlib.util

        spec = importlib.util.find_spec(name)
    except Exception:
        return None
    locations = list(getattr(spec, "submodule_search_locations", None) or ()) if spec else []
    return locations[0] if locations else None


def extension_files(folder, stem):
    """The compiled library files named `stem` (_C, libtorchaudio) in `folder`."""
    try:
        names = sorted(os.listdir(folder))
    except (IOError, OSError):
        return []
    return [
        os.path.join(folder, n)
        for n in names
        if n.startswith(stem + ".") and n.rsplit(".", 1)[-1] in ("so", "pyd", "dylib")
    ]


def load_cause(torch, folder, stem):
    """Why a companion's compiled library does not load, in the dynamic loader's own words.

    The companion itself swallows this error (torchvision) or wraps it, so the library is loaded
    once more here, after the verdict, only to read the reason.
    """
    if not folder:
        return None
    files = extension_files(folder, stem)
    if not files:
        return "no compiled library %s.* in %s" % (stem, folder)
    try:
        torch.ops.load_library(files[0])
    except Exception as exc:
        inner = exc.__cause__ or exc  # torch wraps the loader's OSError: "Could not load this library"
        return ("%s: %s" % (os.path.basename(files[0]), inner))[:2000]
    return None


def failure(step, exc, cause):
    record = {"status": "failed", "step": step, "error": short_error(exc)}
    if cause:
        record["cause"] = cause
    return record


def forget(package):
    for key in list(sys.modules):
        if key == package or key.startswith(package + "."):
            del sys.modules[key]


def import_submodule(package, folder, submodule):
    """Import `package.submodule` under a bare stand-in for the package, so that the package's own
    __init__ does not run: torchvision's imports torch._dynamo (seconds), while its `extension`
    module alone loads the compiled library exactly as the package does (DLL folders included)."""
    import importlib
    import importlib.machinery
    import types

    forget(package)
    stub = types.ModuleType(package)
    stub.__path__ = [folder]
    stub.__package__ = package
    stub.__spec__ = importlib.machinery.ModuleSpec(package, None, is_package=True)
    stub.__spec__.submodule_search_locations = [folder]
    sys.modules[package] = stub
    try:
        return importlib.import_module(package + "." + submodule)
    finally:
        forget(package)


def missing_module(exc, name):
    """Whether `exc` says that module `name` itself does not exist (an older layout)."""
    return isinstance(exc, ImportError) and getattr(exc, "name", None) == name


def user_import_failure(torch, folder):
    """The error a user's `import torchvision; torchvision.ops.nms(...)` meets, or None if none."""
    forget("torchvision")
    try:
        import torchvision
    except Exception as exc:
        return failure("import", exc, load_cause(torch, folder, "_C"))
    try:
        torchvision.ops.nms(torch.tensor(NMS_BOXES), torch.tensor(NMS_SCORES), 0.5)
    except Exception as exc:
        return failure("nms", exc, load_cause(torch, folder, "_C"))
    finally:
        forget("torchvision")
    return None


def check_torchvision(torch):
    folder = package_dir("torchvision")
    found = {"module_version": version_file(folder) if folder else None}
    if folder is None:
        found.update(failure("import", ImportError("no torchvision package folder on sys.path"), None))
        return found
    found["location"] = folder
    extension = None  # kept referenced while the operator runs
    try:
        extension = import_submodule("torchvision", folder, "extension")
    except Exception as exc:
        if not missing_module(exc, "torchvision.extension"):
            # Raised by the extension module itself, as `import torchvision` would raise it (for
            # one, torchvision's check that its CUDA major version is torch's).
            found.update(failure("import", exc, load_cause(torch, folder, "_C")))
            return found
    try:
        keep = torch.ops.torchvision.nms(torch.tensor(NMS_BOXES), torch.tensor(NMS_SCORES), 0.5)
        keep = [int(i) for i in keep.tolist()]
    except Exception as exc:
        # The operator is not registered: record what the user's own import says about it.
        said = user_import_failure(torch, folder)
        found.update(said or failure("nms", exc, load_cause(torch, folder, "_C")))
        return found
    del extension
    if keep != NMS_KEEP:
        note = "nms kept %r instead of %r" % (keep, NMS_KEEP)
        found.update({"status": "wrong", "step": "nms", "note": note})
        return found
    try:
        built = int(torch.ops.torchvision._cuda_version())
        found["cuda"] = "%d.%d" % (built // 1000, built % 1000 // 10) if built > 0 else None
    except Exception:
        pass  # an older torchvision without the query: the variant label still tells
    found["status"] = "ok"
    return found


def check_torchaudio(torch):
    folder = package_dir("torchaudio")
    found = {"module_version": version_file(folder) if folder else None}
    lib = os.path.join(folder, "lib") if folder else None
    if folder is None:
        found.update(failure("import", ImportError("no torchaudio package folder on sys.path"), None))
        return found
    found["location"] = folder
    try:
        # `import torchaudio` loads this first; alone it skips the package's other imports.
        extension = import_submodule("torchaudio", folder, "_extension")
    except Exception as exc:
        if missing_module(exc, "torchaudio._extension"):
            extension = None
        else:
            inner = exc.__cause__  # torch wraps the loader's own words about the library
            cause = str(inner)[:2000] if inner is not None else load_cause(torch, lib, "libtorchaudio")
            found.update(failure("import", exc, cause))
            return found
    if getattr(extension, "_IS_TORCHAUDIO_EXT_AVAILABLE", None) is False:
        found.update(
            {
                "status": "failed",
                "step": "extension",
                "error": {
                    "type": "ImportError",
                    "message": "torchaudio's compiled extension is not available "
                    "(torchaudio._extension._IS_TORCHAUDIO_EXT_AVAILABLE is False)",
                },
            }
        )
        cause = load_cause(torch, lib, "libtorchaudio")
        if cause:
            found["cause"] = cause
        return found
    found["status"] = "ok"
    return found


COMPANION_CHECKS = {"torchvision": check_torchvision, "torchaudio": check_torchaudio}


def check_companions(torch, present, deadline):
    """One "companion" record per installed companion, each under the step watchdog."""
    for entry in present:
        name = entry["name"]
        check = COMPANION_CHECKS.get(name)
        if check is None:
            continue
        now = time.time()
        limit = step_timeout(COMPANION_TIMEOUT, deadline, now)
        if limit < MIN_STEP_TIME:
            emit("companion", {"name": name, "status": "skipped", "note": "no time left (raise --timeout)"})
            continue
        emit("companion_start", {"name": name, "timeout": limit, "t": now})
        record = {"name": name, "version": entry.get("version"), "timeout": limit}
        arm_watchdog(limit)
        started = time.time()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                record.update(check(torch))
            except Exception as exc:  # a bug here must not cost the smoke test
                record.update(failure("check", exc, None))
            finally:
                faulthandler.cancel_dump_traceback_later()
        record["seconds"] = time.time() - started
        if caught:
            record["warnings"] = [str(w.message)[:2000] for w in caught][:20]
        emit("companion", record)


# ---------------------------------------------------------------------------------------------
# Around torch, read before the import (so that a crash in it still leaves them): the copies of
# torch on sys.path, the user site, the conda packages of this prefix, NumPy's version and the
# CPU's instruction-set flags. Files and folders only; nothing is imported.

MAX_COPIES = 8
CONDA_WATCHED = (
    "pytorch",
    "pytorch-cuda",
    "pytorch-cpu",
    "pytorch-gpu",
    "pytorch-mutex",
    "libtorch",
    "torchvision",
    "torchaudio",
    "cpuonly",
    "mkl",
    "numpy",
    "libstdcxx-ng",
    "libstdcxx",
    "libgcc-ng",
    "libgcc",
    "intel-openmp",
    "llvm-openmp",
    "cudatoolkit",
)
CPU_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f")


def torch_copies():
    """Every folder on sys.path that holds a torch package, in import order (the first wins for a
    plain `import torch`), with the version its version.py and its dist-info name say."""
    found = []
    seen = set()
    for entry in sys.path:
        folder = entry or os.curdir
        try:
            real = os.path.realpath(folder)
        except (OSError, ValueError):
            continue
        if real in seen:
            continue
        seen.add(real)
        package = os.path.join(folder, "torch")
        if not os.path.isfile(os.path.join(package, "__init__.py")):
            continue
        copy = {"path": real, "version": version_file(package), "dists": dist_infos(folder, "torch")}
        found.append(copy)
        if len(found) >= MAX_COPIES:
            break
    return found


def dist_infos(folder, name):
    """The versions of `name`'s dist-info / egg-info folders in `folder` (two mean a mixed install)."""
    try:
        names = os.listdir(folder)
    except (IOError, OSError):
        return []
    found = []
    prefix = name + "-"
    for entry in names:
        lowered = entry.lower()
        if lowered.startswith(prefix) and lowered.endswith((".dist-info", ".egg-info")):
            found.append(entry.rsplit(".", 1)[0][len(prefix) :])
    return sorted(found)[:8]


def cwd_torch():
    """A torch package folder in the working directory: `python` started here (interactive, -c,
    -m) imports it instead of the installed one, as a source checkout of torch does."""
    try:
        here = os.getcwd()
    except (IOError, OSError):
        return None
    package = os.path.join(here, "torch")
    if not os.path.isfile(os.path.join(package, "__init__.py")):
        return None
    return {"path": os.path.realpath(package), "version": version_file(package)}


def user_site():
    try:
        import site

        path = site.getusersitepackages() if hasattr(site, "getusersitepackages") else None
        enabled = bool(getattr(site, "ENABLE_USER_SITE", False))
    except Exception:
        path, enabled = None, False
    return {
        "path": path if isinstance(path, str) else None,
        "enabled": enabled,
        "no_user_site_flag": bool(getattr(sys.flags, "no_user_site", 0)),
        "env": "PYTHONNOUSERSITE" in os.environ,
    }


def conda_packages():
    """name, version and build of the watched packages conda installed into this prefix, from the
    file names in conda-meta (name-version-build.json); None when the prefix is no conda env."""
    folder = os.path.join(sys.prefix, "conda-meta")
    try:
        names = os.listdir(folder)
    except (IOError, OSError):
        return None
    found = []
    for entry in sorted(names):
        if not entry.endswith(".json"):
            continue
        parts = entry[: -len(".json")].rsplit("-", 2)
        if len(parts) == 3 and parts[0].lower() in CONDA_WATCHED:
            found.append({"name": parts[0], "version": parts[1], "build": parts[2]})
    return found[:40]


def cpu_flags():
    """The instruction-set flags of interest the CPU has (Linux /proc/cpuinfo); None elsewhere."""
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return [f for f in CPU_FLAGS if f in flags]
    except (IOError, OSError):
        pass
    return None


ENTRY_POINTS = ("python", "python3", "pip", "pip3", "torchrun")
SHEBANG_EXEC = re.compile(r"^'''exec' (\S+)")


def shebang(path):
    """The interpreter a console script runs: its #! line, or the exec line pip writes under
    #!/bin/sh when the interpreter's path is too long for #!. None for a binary."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(1024).decode("utf-8", "replace")
    except (IOError, OSError):
        return None
    lines = head.splitlines()
    if not lines or not lines[0].startswith("#!"):
        return None
    words = lines[0][2:].split()
    if not words:
        return None
    if words[0].endswith("/sh"):
        for line in lines[1:4]:
            match = SHEBANG_EXEC.match(line)
            if match:
                return match.group(1)
        return None
    if words[0].endswith("/env") and len(words) > 1:
        try:
            import shutil

            return shutil.which(words[1])
        except Exception:
            return None
    return words[0]


def same_folder(a, b):
    try:
        return os.path.realpath(os.path.dirname(a)) == os.path.realpath(os.path.dirname(b))
    except (OSError, ValueError):
        return None


def entry_points():
    """What `python`, `pip`, `torchrun` on PATH run: the interpreter of each, and whether it is the
    examined one (same folder: a venv's python is a link to the base interpreter, its folder is not).
    POSIX only: Windows' launchers are .exe files."""
    if os.name == "nt":
        return None
    try:
        import shutil
    except Exception:
        return None
    found = []
    for name in ENTRY_POINTS:
        try:
            path = shutil.which(name)
        except Exception:
            path = None
        if not path:
            continue
        interpreter = path if name.startswith("python") else shebang(path)
        if interpreter and os.path.basename(interpreter) in ("sh", "bash", "zsh", "dash"):
            interpreter = None  # a shim (pyenv, asdf) that picks the interpreter at run time
        entry = {"name": name, "path": path, "interpreter": interpreter}
        if interpreter:
            entry["same_environment"] = same_folder(interpreter, sys.executable)
        found.append(entry)
    return found


def surroundings():
    data = {
        "executable": sys.executable,
        "entry_points": entry_points(),
        "torch_copies": torch_copies(),
        "cwd_torch": cwd_torch(),
        "user_site": user_site(),
        "conda_packages": conda_packages(),
        "numpy_version": dist_version("numpy"),
        "cpu_flags": cpu_flags(),
        "machine": platform.machine(),
    }
    return data


# ---------------------------------------------------------------------------------------------
# Binary links: the libraries a compiled file asks the loader for (ELF DT_NEEDED, PE imports,
# Mach-O LC_LOAD_DYLIB), read from its headers with a few small reads, whatever its size (a
# flash-attn build is 400 MB). A file that links torch's own libraries is a torch extension.

TORCH_LIBRARIES = (
    "c10",
    "c10_cuda",
    "c10_hip",
    "c10_xpu",
    "torch",
    "torch_cpu",
    "torch_cuda",
    "torch_cuda_cpp",
    "torch_cuda_cu",
    "torch_hip",
    "torch_xpu",
    "torch_python",
    "torch_global_deps",
)


def library_stem(name):
    """ "c10" from "libc10.so", "@rpath/libc10.dylib" or "c10.dll"."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1].lower()
    if base.startswith("lib"):
        base = base[3:]
    return base.split(".", 1)[0]


def links_torch(names):
    return any(library_stem(n) in TORCH_LIBRARIES for n in names)


def read_at(handle, offset, size):
    handle.seek(offset)
    return handle.read(size)


def c_string(handle, offset):
    return read_at(handle, offset, 512).split(b"\0", 1)[0].decode("utf-8", "replace")


def elf_needed(handle, head):
    import struct

    wide = head[4:5] == b"\x02"
    order = "<" if head[5:6] == b"\x01" else ">"
    if wide:
        phoff = struct.unpack(order + "Q", head[32:40])[0]
        phentsize, phnum = struct.unpack(order + "HH", head[54:58])
    else:
        phoff = struct.unpack(order + "I", head[28:32])[0]
        phentsize, phnum = struct.unpack(order + "HH", head[42:46])
    table = read_at(handle, phoff, phentsize * min(phnum, 256))
    loads, dynamic = [], None
    for i in range(min(phnum, 256)):
        entry = table[i * phentsize : (i + 1) * phentsize]
        if wide and len(entry) >= 40:
            kind, _, offset, vaddr, _, filesz = struct.unpack(order + "IIQQQQ", entry[:40])
        elif not wide and len(entry) >= 20:
            kind, offset, vaddr, _, filesz = struct.unpack(order + "IIIII", entry[:20])
        else:
            break
        if kind == 1:
            loads.append((vaddr, offset, filesz))
        elif kind == 2:
            dynamic = (offset, filesz)
    if dynamic is None:
        return []
    data = read_at(handle, dynamic[0], min(dynamic[1], 1 << 16))
    size, form = (16, order + "qQ") if wide else (8, order + "iI")
    needed, strtab = [], None
    for start in range(0, len(data) - size + 1, size):
        tag, value = struct.unpack(form, data[start : start + size])
        if tag == 0:
            break
        if tag == 1:
            needed.append(value)
        elif tag == 5:
            strtab = value
    base = next((o + strtab - v for v, o, s in loads if strtab is not None and v <= strtab < v + s), None)
    if base is None:
        return []
    return [c_string(handle, base + n) for n in needed[:64]]


def pe_needed(handle, head):
    import struct

    start = struct.unpack("<I", head[60:64])[0]
    header = read_at(handle, start, 24)
    if header[:4] != b"PE\0\0":
        return None
    sections_count, optional_size = struct.unpack("<H", header[6:8])[0], struct.unpack("<H", header[20:22])[0]
    optional = handle.read(optional_size)
    directories = 96 if optional[:2] == b"\x0b\x01" else 112  # PE32 or PE32+
    if len(optional) < directories + 16:
        return []
    imports = struct.unpack("<I", optional[directories + 8 : directories + 12])[0]
    sections = handle.read(40 * min(sections_count, 96))

    def offset_of(rva):
        for i in range(len(sections) // 40):
            vsize, vaddr, rawsize, rawptr = struct.unpack("<IIII", sections[i * 40 + 8 : i * 40 + 24])
            if vaddr <= rva < vaddr + max(vsize, rawsize):
                return rawptr + rva - vaddr
        return None

    table = offset_of(imports) if imports else None
    names = []
    for i in range(256 if table is not None else 0):
        descriptor = read_at(handle, table + 20 * i, 20)
        if len(descriptor) < 20 or descriptor == b"\0" * 20:
            break
        where = offset_of(struct.unpack("<I", descriptor[12:16])[0])
        if where is not None:
            names.append(c_string(handle, where))
    return names


def macho_needed(handle, head, base=0):
    import struct

    magic = head[:4]
    if magic in (b"\xca\xfe\xba\xbe", b"\xca\xfe\xba\xbf") and base == 0:  # universal: the first slice
        offset = struct.unpack(">I", head[16:20])[0]
        return macho_needed(handle, read_at(handle, offset, 32), offset)
    if magic == b"\xcf\xfa\xed\xfe":
        header_size = 32
    elif magic == b"\xce\xfa\xed\xfe":
        header_size = 28
    else:
        return None
    count, size = struct.unpack("<II", head[16:24])
    commands = read_at(handle, base + header_size, min(size, 1 << 20))
    names, at = [], 0
    for _ in range(min(count, 4096)):
        if at + 8 > len(commands):
            break
        command, length = struct.unpack("<II", commands[at : at + 8])
        if length < 8:
            break
        if command in (0xC, 0x80000018, 0x8000001F, 0x80000023):  # LOAD, WEAK, REEXPORT, UPWARD
            name_at = struct.unpack("<I", commands[at + 8 : at + 12])[0]
            names.append(commands[at + name_at : at + length].split(b"\0", 1)[0].decode("utf-8", "replace"))
        at += length
    return names


def linked_libraries(path):
    """The libraries a compiled file links, in its own words; None when it is no ELF, PE or Mach-O
    file or cannot be read."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(64)
            if head[:4] == b"\x7fELF":
                return elf_needed(handle, head)
            if head[:2] == b"MZ" and len(head) >= 64:
                return pe_needed(handle, head)
            return macho_needed(handle, head)
    except Exception:
        return None


# ---------------------------------------------------------------------------------------------
# Extensions: installed distributions whose compiled files link torch (flash-attn, xformers,
# torch-scatter, detectron2, mmcv, apex, vllm, torchao, ...). Candidates are the distributions
# that require torch plus the ones envdoctor's table names (mmcv-full, detectron2 and apex do not
# declare torch); their compiled files come from RECORD, else from their top-level packages.

COMPILED_SUFFIXES = (".so", ".pyd", ".dylib")
MAX_COMPILED_FILES = 48  # per distribution: bitsandbytes ships one library per CUDA version
MAX_EXTENSION_FILES = 6  # torch-linked files loaded per distribution
MAX_EXTENSIONS = 24  # torch extensions reported
MAX_CANDIDATES = 160  # distributions examined for torch-linked files
EXAMINE_SECONDS = 1.0  # reading headers is milliseconds a distribution; a slow disk stops here
NOT_EXTENSIONS = ("torch", "torchvision", "torchaudio", "triton")
BUILD_INFO_FILES = ("cpp_lib.json",)  # xformers: the torch and CUDA it was built for


def compiled(path):
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return name.endswith(COMPILED_SUFFIXES) or ".so." in name


COMPILED_MARKS = (".so,", ".pyd,", ".dylib,", ".so.")


def record_files(dist):
    """(compiled files, build-info files, whether it has a Python package of its own) of a
    distribution, as absolute paths, from its RECORD (or installed-files.txt)."""
    record = read_dist_file(dist, "RECORD")
    if record is not None and not any(mark in record for mark in COMPILED_MARKS):
        return [], [], False  # nothing compiled: not worth parsing (pip's RECORD has 1,000 lines)
    try:
        files = dist.files or ()
    except Exception:
        return [], [], False
    found, info, package = [], [], False
    for item in files:
        text = str(item).replace("\\", "/")
        if text.endswith("/__init__.py") and text.count("/") == 1:
            package = True
        if compiled(text) or text.rsplit("/", 1)[-1] in BUILD_INFO_FILES:
            try:
                path = str(dist.locate_file(item))
            except Exception:
                continue
            (found if compiled(text) else info).append(os.path.normpath(path))
            if len(found) >= MAX_COMPILED_FILES:
                break
    return found, info, package


def package_files(dist):
    """Compiled files of a distribution whose RECORD names none (an editable or egg install): the
    folders of its top-level packages, two levels deep."""
    top = read_dist_file(dist, "top_level.txt") or ""
    found = []
    for name in top.split()[:8]:
        try:
            import importlib.util

            spec = importlib.util.find_spec(name)
        except Exception:
            continue
        if spec is None:
            continue
        origin_file = getattr(spec, "origin", None)
        if origin_file and compiled(origin_file):
            found.append(origin_file)  # a top-level extension module (flash_attn_2_cuda.so)
        for folder in list(getattr(spec, "submodule_search_locations", None) or ())[:2]:
            for root, dirs, names in os.walk(folder):
                found += [os.path.join(root, n) for n in names if compiled(n)]
                top = os.path.normpath(root) == os.path.normpath(folder)
                # Two levels: the package and its subpackages (detectron2/_C, mmcv/_ext).
                dirs[:] = [d for d in dirs if top and not d.startswith((".", "__"))]
                if len(found) >= MAX_COMPILED_FILES:
                    break
    return found[:MAX_COMPILED_FILES]


def build_info(paths):
    """What an extension's own build-info file says it was built for (xformers' cpp_lib.json)."""
    for path in paths:
        try:
            with open(path) as handle:
                data = json.loads(handle.read(65536))
            version = data.get("version") or {}
            return {
                "torch": str(version.get("torch")) if version.get("torch") else None,
                "cuda": str(version.get("cuda")) if version.get("cuda") else None,
                "python": str(version.get("python")) if version.get("python") else None,
            }
        except Exception:
            continue
    return None


def module_name(path):
    """ "trilinear" from ".../trilinear.cpython-37m-x86_64-linux-gnu.so"."""
    return os.path.basename(path).split(".", 1)[0]


def examine_extension(dist, name, version, requires_torch):
    """The torch-linked compiled files of one distribution; None when it has none and neither
    requires torch nor is in the table (a compiled package that has nothing to do with torch)."""
    files, info, package = record_files(dist)
    if not files and read_dist_file(dist, "RECORD") is None:
        files = package_files(dist)  # an egg or a setup.py install: no RECORD to read
    linked = []
    for path in files:
        libraries = linked_libraries(path)
        if libraries is not None and links_torch(libraries):
            linked.append(path)
    if not linked and not requires_torch:
        return None
    folders = set(os.path.normcase(os.path.realpath(p)) for p in sys.path if p)
    entry = {
        "name": name,
        "version": version,
        "requires_torch": requires_torch,
        "compiled_files": len(files),
        "files": linked[:MAX_EXTENSION_FILES],
        "python_package": package,
        # Compiled modules straight in a sys.path folder: `import name` loads them directly, and
        # nothing has imported torch (whose libraries they need) before unless the caller did.
        "top_level": sorted(
            set(
                module_name(p)
                for p in linked
                if os.path.normcase(os.path.realpath(os.path.dirname(p))) in folders
            )
        )[:8],
    }
    entry.update(origin(dist))
    built = build_info(info)
    if built:
        entry["built_for"] = built
    return entry


def load_extension(torch, path):
    """Load one compiled file the way torch.ops.load_library does (ctypes, the loader resolving
    every symbol now): an extension built for another torch fails here with its undefined symbol."""
    import ctypes

    ctypes.CDLL(path)


def check_extensions(torch, extensions, deadline):
    """One "extension" record per torch-linked file, each under the step watchdog; after the smoke
    test, so that an extension that crashes the process costs nothing already measured."""
    for entry in extensions:
        for path in entry.get("files") or ():
            record = {"name": entry["name"], "file": path}
            now = time.time()
            limit = step_timeout(EXTENSION_TIMEOUT, deadline, now)
            if limit < MIN_STEP_TIME:
                record.update({"status": "skipped", "note": "no time left (raise --timeout)"})
                emit("extension", record)
                continue
            emit("extension_start", dict(record, timeout=limit, t=now))
            arm_watchdog(limit)
            started = time.time()
            try:
                load_extension(torch, path)
                record["status"] = "ok"
            except Exception as exc:
                record.update({"status": "failed", "error": short_error(exc)})
            finally:
                faulthandler.cancel_dump_traceback_later()
            record["seconds"] = time.time() - started
            emit("extension", record)


EXTENSION_TIMEOUT = 10.0  # loading even a 400 MB library takes well under a second


# ---------------------------------------------------------------------------------------------
# JIT extension caches (torch.utils.cpp_extension's torch_extensions, and the tables' others):
# each build folder's lock file and when its library was built, against when torch was installed.

MAX_CACHE_ENTRIES = 200


def cache_root(row):
    variable = row.get("env")
    if variable and os.environ.get(variable):
        return os.environ[variable]
    system = platform.system().lower()
    key = {"darwin": "macos"}.get(system, system)
    template = (row.get("paths") or {}).get(key)
    if not template:
        return None
    if row.get("xdg") and key == "linux" and os.environ.get("XDG_CACHE_HOME"):
        template = template.replace("~/.cache", os.environ["XDG_CACHE_HOME"])
    return os.path.expandvars(os.path.expanduser(template))


def cache_entries(root, lock_name, levels):
    """The build folders under `root` (`levels` deep: torch_extensions/py311_cu121/<name>)."""
    folders = [root]
    for _ in range(levels):
        below = []
        for folder in folders:
            try:
                below += [os.path.join(folder, n) for n in sorted(os.listdir(folder))]
            except (IOError, OSError):
                continue
        folders = [f for f in below if os.path.isdir(f)][:MAX_CACHE_ENTRIES]
    found = []
    for folder in folders:
        try:
            names = os.listdir(folder)
        except (IOError, OSError):
            continue
        entry = {"path": folder, "lock": None, "built": None}
        if lock_name and lock_name in names:
            try:
                entry["lock"] = os.path.getmtime(os.path.join(folder, lock_name))
            except (IOError, OSError):
                pass
        built = [os.path.join(folder, n) for n in names if compiled(n)]
        times = []
        for path in built:
            try:
                times.append(os.path.getmtime(path))
            except (IOError, OSError):
                pass
        if times:
            entry["built"] = max(times)
        if entry["lock"] is not None or entry["built"] is not None:
            found.append(entry)
    return found


def jit_caches(table, torch_file):
    found = []
    for row in (table or {}).get("jit_caches") or ():
        root = cache_root(row)
        if not root or not os.path.isdir(root):
            continue
        found.append(
            {
                "tool": row.get("tool"),
                "root": root,
                "entries": cache_entries(root, row.get("lock"), int(row.get("levels", 1))),
            }
        )
    installed = None
    if torch_file:
        try:
            installed = os.path.getmtime(os.path.join(os.path.dirname(torch_file), "version.py"))
        except (IOError, OSError):
            pass
    return {"caches": found, "torch_installed": installed, "now": time.time()}


HERE = os.path.dirname(os.path.abspath(__file__))
TABLE = os.path.join(HERE, os.pardir, "knowledge", "torch_extensions.json")


def read_table(path):
    """envdoctor's extensions table (knowledge/torch_extensions.json), read by path beside this
    script (--knowledge names another): the child cannot import envdoctor."""
    path = path or TABLE
    try:
        with open(path) as handle:
            return json.load(handle)
    except Exception:
        return None


def extension_names(table):
    return set(normalize(row.get("name", "")) for row in (table or {}).get("extensions") or ())


# NumPy beside torch: its version and whether torch's bridge to it works.

NUMPY_MESSAGE_LIMIT = 2000


class StderrTee(object):
    """Passes everything on to the real stderr and keeps the first characters written: NumPy 2
    prints "A module that was compiled using NumPy 1.x cannot be run in NumPy 2.x" there (not as
    a warning) while torch imports."""

    def __init__(self, stream):
        self.stream = stream
        self.parts = []
        self.size = 0

    def write(self, text):
        if self.size < NUMPY_MESSAGE_LIMIT:
            self.parts.append(text)
            self.size += len(text)
        return self.stream.write(text)

    def text(self):
        return "".join(self.parts)[:NUMPY_MESSAGE_LIMIT]

    def __getattr__(self, name):
        return getattr(self.stream, name)


def numpy_facts(torch, printed):
    """The NumPy distribution (read from its metadata, never imported here: torch imports it
    itself when it can), whether tensor.numpy() works, and NumPy's own message if it printed one."""
    data = {"version": dist_version("numpy"), "bridge": "not_run"}
    if "numpy" in printed.lower():  # NumPy 2's banner, or an older one's "...version of numpy is 0xd"
        data["message"] = printed
    if torch is None:
        return data
    try:
        torch.zeros(1).numpy()
        data["bridge"] = "ok"
    except Exception as exc:
        data["bridge"] = "failed"
        data["error"] = short_error(exc)["message"][:500]
    return data


# ---------------------------------------------------------------------------------------------
# Smoke test: prove that kernels run and compute the right numbers, on the CPU and every GPU.

CPU_SIZE = 256  # CPU matmuls at 256 take about a millisecond: the check stays as fast as the import
CPU_MAX_SIZE = 1024  # an fp64 reference at 1024 already takes ~0.6 s on a 2-core machine
CPU_HALF_MAX = 128  # CPUs lack a fast fp16 GEMM: 1024x1024 fp16 takes seconds there
GPU_SIZE = 1024
MIN_SIZE = 16
MAX_SIZE = 16384  # two 16384^2 fp32 inputs already take 2 GiB of host memory
SAMPLE_ROWS = 256  # a product bigger than 4x this is checked on its first and last rows only
WORKING_SET = 40  # bytes per matrix element the GPU steps hold at once (about ten fp32 matrices)
MEMORY_SHARE = 4  # use at most a quarter of the free memory
CPU_THREADS = 1
CPU_STEP_TIMEOUT = 15.0
GPU_INIT_TIMEOUT = 30.0  # context creation, and PTX JIT when the GPU is newer than the build
GPU_STEP_TIMEOUT = 20.0
EXIT_MARGIN = 1.0  # seconds kept back from the parent's budget to report and exit
MIN_STEP_TIME = 0.5
TIMING_TARGET = {"cpu": 0.005, "gpu": 0.025}  # seconds of timed repetitions after the warm-up
TIMING_MAX_REPS = {"cpu": 10, "gpu": 200}
SEED = 20240601

# Unit roundoff of each precision; tf32 keeps fp16's 10-bit mantissa.
UNIT_ROUNDOFF = {
    "float32": 2.0**-24,
    "tf32": 2.0**-11,
    "float16": 2.0**-11,
    "bfloat16": 2.0**-8,
}

STEPS = ("init", "matmul_fp32", "autograd", "matmul_fp16", "matmul_bf16", "conv2d")


def parse_args(argv):
    options = {"smoke": True, "size": None, "budget": None, "knowledge": None}
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--no-smoke":
            options["smoke"] = False
        elif arg == "--knowledge" and args:
            options["knowledge"] = args.pop(0)
        elif arg in ("--smoke-size", "--budget") and args:
            value = args.pop(0)
            try:
                number = float(value)
            except ValueError:
                continue  # the parent validates; a bad value here just keeps the default
            if arg == "--smoke-size":
                options["size"] = int(number)
            else:
                options["budget"] = number
    return options


def tolerance(precision, k):
    """Largest acceptable max|C - R| / sqrt(k) for a length-k dot product of N(0,1) inputs.

    Rounding the inputs/outputs to `precision` costs a few units of its roundoff (measured: ~5u
    for fp16/bf16), and fp32 accumulation grows like sqrt(k); wrong kernels are off by O(1).
    """
    return 32.0 * UNIT_ROUNDOFF[precision] + 16.0 * UNIT_ROUNDOFF["float32"] * math.sqrt(k)


def fit_size(requested, free_bytes):
    """The matrix size to use: `requested`, shrunk so the working set fits in a share of free memory."""
    size = requested
    if free_bytes is not None and free_bytes >= 0:
        size = min(size, int(math.sqrt(float(free_bytes) / MEMORY_SHARE / WORKING_SET)))
    size -= size % MIN_SIZE
    return max(MIN_SIZE, min(size, MAX_SIZE))


def step_timeout(default, deadline, now):
    """The time a step may take: its own limit, cut to what is left of the child's budget."""
    if deadline is None:
        return default
    return min(default, deadline - now)


def normalized_error(result, reference, k):
    """max|result - reference| / sqrt(k), as a float; inf when the result is not finite."""
    diff = (result.double() - reference.double()).abs().max().item()
    if diff != diff or diff == float("inf"):
        return float("inf")
    return diff / math.sqrt(max(k, 1))


def first_line(text):
    return text.strip().splitlines()[0] if text.strip() else text


def arm_watchdog(seconds):
    """Exit the process, with the stack on stderr, if the step is still running after `seconds`."""
    for stream in (sys.stderr, sys.__stderr__):
        try:
            faulthandler.dump_traceback_later(seconds, exit=True, file=stream)
            return True
        except (AttributeError, ValueError, OSError, RuntimeError):
            continue  # a stderr without a file descriptor: try the original one
    return False  # no watchdog: the parent's timeout still ends a hang


class StepSkipped(Exception):
    """A step that cannot run here (not supported): recorded as skipped, not as a failure."""


# How torch says a dtype has no kernel on a device at all (old CPU builds: "addmm_impl_cpu_" not
# implemented for 'Half'; MPS on older macOS: BFloat16 is not supported): nothing is broken.
UNSUPPORTED = ("not implemented for", "not supported on", "is not supported")


class Device(object):
    """One place to compute: the CPU, a CUDA/ROCm GPU or Apple's MPS."""

    def __init__(self, torch, kind, label, name, capability=None):
        self.torch = torch
        self.kind = kind  # cpu, cuda, rocm, xpu, mps
        self.label = label  # "cpu", "cuda:0", "mps"
        self.name = name
        self.capability = capability
        self.device = torch.device(label)

    @property
    def gpu(self):
        return self.kind != "cpu"

    def sync(self):
        if self.kind in ("cuda", "rocm"):
            self.torch.cuda.synchronize(self.device)
        elif self.kind == "xpu":
            self.torch.xpu.synchronize(self.device)
        elif self.kind == "mps":
            self.torch.mps.synchronize()

    def memory(self):
        """(free, total) bytes on the device, or (None, None) where it cannot say."""
        torch = self.torch
        try:
            if self.kind in ("cuda", "rocm"):
                free, total = torch.cuda.mem_get_info(self.device)
                return int(free), int(total)
            if self.kind == "xpu" and hasattr(torch.xpu, "mem_get_info"):
                free, total = torch.xpu.mem_get_info(self.device)
                return int(free), int(total)
            if self.kind == "mps":
                limit = getattr(torch.mps, "recommended_max_memory", None)
                if limit is not None:
                    total = int(limit())
                    return total - int(torch.mps.driver_allocated_memory()), total
        except Exception:
            pass
        return None, None

    def reset_peak(self):
        if self.kind in ("cuda", "rocm", "xpu"):
            try:
                module = self.torch.xpu if self.kind == "xpu" else self.torch.cuda
                module.reset_peak_memory_stats(self.device)
            except Exception:
                pass

    def peak(self):
        try:
            if self.kind in ("cuda", "rocm"):
                return int(self.torch.cuda.max_memory_allocated(self.device))
            if self.kind == "xpu":
                return int(self.torch.xpu.max_memory_allocated(self.device))
            if self.kind == "mps":
                return int(self.torch.mps.current_allocated_memory())
        except Exception:
            pass
        return None

    def supports(self, dtype_name):
        """Whether to try fp16/bf16 here; None when unknown (then the step says why it could not run)."""
        torch = self.torch
        if dtype_name == "bfloat16" and self.kind in ("cuda", "rocm"):
            try:
                return bool(torch.cuda.is_bf16_supported())
            except Exception:
                return None
        return True

    def conv_backend(self):
        """The library a conv2d runs through here, or None when there is none to test."""
        torch = self.torch
        if self.kind == "cpu":
            return (
                "oneDNN"
                if getattr(torch.backends, "mkldnn", None) and torch.backends.mkldnn.is_available()
                else "native"
            )
        if self.kind == "mps":
            return "MPS"
        if self.kind == "xpu":
            return "oneDNN (XPU)"
        try:
            if torch.backends.cudnn.is_available():
                return "MIOpen" if self.kind == "rocm" else "cuDNN %s" % torch.backends.cudnn.version()
        except Exception:
            pass
        return None

    def describe(self):
        data = {"device": self.label, "kind": self.kind, "name": self.name}
        if self.capability is not None:
            data["capability"] = list(self.capability)
        if self.kind == "cpu":
            data["threads"] = CPU_THREADS
            try:
                data["threads_available"] = int(self.torch.get_num_threads())
            except Exception:
                pass
        return data


def cpu_name():
    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except (IOError, OSError):
        pass
    return name


def devices_to_test(torch, info):
    found = [Device(torch, "cpu", "cpu", cpu_name())]
    if info.get("cuda_available"):
        kind = "rocm" if info.get("hip") else "cuda"
        for entry in info.get("devices") or ():
            capability = entry.get("capability")
            found.append(Device(torch, kind, "cuda:%d" % entry["index"], entry.get("name"), capability))
    if info.get("xpu_available"):
        for entry in info.get("xpu_devices") or ():
            found.append(Device(torch, "xpu", "xpu:%d" % entry["index"], entry.get("name")))
    if info.get("mps_available"):
        found.append(Device(torch, "mps", "mps", "Apple GPU (MPS)"))
    return found


class Smoke(object):
    def __init__(self, torch, info, size, deadline):
        self.torch = torch
        self.info = info
        self.requested = size
        self.deadline = deadline
        self.generator = torch.Generator().manual_seed(SEED)
        self.inputs = {}
        self.references = {}

    # -- inputs and references, made once on the CPU and shared by every device --

    def matrices(self, n):
        if n not in self.inputs:
            torch = self.torch
            a = torch.randn(n, n, generator=self.generator)
            b = torch.randn(n, n, generator=self.generator)
            self.inputs[n] = (a, b)
        return self.inputs[n]

    def rows(self, n):
        """The rows of an n x n result to check, or None for all: big products are sampled at
        both ends (first and last tiles), which keeps the CPU reference and the copies cheap."""
        if n <= 4 * SAMPLE_ROWS:
            return None
        torch = self.torch
        return torch.cat([torch.arange(SAMPLE_ROWS), torch.arange(n - SAMPLE_ROWS, n)])

    def reference(self, n, exact):
        """Rows of A @ B on the CPU: fp64 to judge the CPU itself, fp32 to judge an accelerator."""
        key = (n, exact)
        if key not in self.references:
            a, b = self.matrices(n)
            rows = self.rows(n)
            if rows is not None:
                a = a[rows]
            self.references[key] = a.double() @ b.double() if exact else a @ b
        return self.references[key]

    def picked(self, result, n):
        """The checked rows of a device result, on the CPU."""
        rows = self.rows(n)
        return (result if rows is None else result[rows.to(result.device)]).cpu()

    # -- the run --

    def run(self):
        started = time.time()
        emit("smoke", {"phase": "start", "requested_size": self.requested, "t": started})
        for device in devices_to_test(self.torch, self.info):
            self.run_device(device)
        emit("smoke", {"phase": "end", "seconds": time.time() - started})

    def size_for(self, device, free):
        if device.kind == "cpu":
            return max(MIN_SIZE, min(self.requested or CPU_SIZE, CPU_MAX_SIZE))
        return fit_size(self.requested or GPU_SIZE, free)

    def run_device(self, device):
        started = time.time()
        emit("smoke_device", dict(device.describe(), phase="start"))
        state = {"size": None, "failed": None}
        threads = self.torch.get_num_threads()
        if device.kind == "cpu":
            # One thread: the CPU steps check correctness, and a thread pool that must wait for
            # cores other programs hold made them 10-25x slower on a loaded 2-core machine.
            self.torch.set_num_threads(CPU_THREADS)
        try:
            for name in STEPS:
                if state["failed"]:
                    why = "not run after %s failed" % state["failed"].replace("_", " ")
                    self.record_skip(device, name, why)
                    continue
                outcome = self.run_step(device, name, state)
                if outcome == "failed":
                    state["failed"] = name
        finally:
            self.torch.set_num_threads(threads)
        free, total = device.memory() if device.gpu else (None, None)
        emit(
            "smoke_device",
            {
                "phase": "end",
                "device": device.label,
                "memory_free_bytes": free,
                "memory_total_bytes": total,
                "peak_allocated_bytes": device.peak() if device.gpu else None,
                "seconds": time.time() - started,
            },
        )

    def record_skip(self, device, name, why):
        emit("step", {"device": device.label, "step": name, "status": "skipped", "note": why})

    def run_step(self, device, name, state):
        now = time.time()
        default = CPU_STEP_TIMEOUT
        if device.gpu:
            default = GPU_INIT_TIMEOUT if name == "init" else GPU_STEP_TIMEOUT
        limit = step_timeout(default, self.deadline, now)
        if limit < MIN_STEP_TIME:
            self.record_skip(device, name, "no time left (raise --timeout)")
            return "skipped"
        emit("step_start", {"device": device.label, "step": name, "timeout": limit, "t": now})
        record = {"device": device.label, "step": name, "timeout": limit}
        # The watchdog is a C thread: it fires even when a CUDA call holds the GIL, prints
        # "Timeout (...)!" with the stack on stderr and exits, so the parent knows which step hung.
        arm_watchdog(limit)
        started = time.time()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                record.update(getattr(self, "step_" + name)(device, state))
            except StepSkipped as exc:
                record["status"] = "skipped"
                record["note"] = str(exc)
            except Exception as exc:
                record["status"] = "failed"
                record["error"] = short_error(exc)
            finally:
                faulthandler.cancel_dump_traceback_later()
        record["seconds"] = time.time() - started
        if caught:
            record["warnings"] = [str(w.message)[:2000] for w in caught]
        emit("step", record)
        return record["status"]

    def timed(self, device, work, flops):
        """Seconds per call of `work` after a warm-up, with repetitions sized to a small time target."""
        group = "gpu" if device.gpu else "cpu"
        device.sync()
        started = time.perf_counter()
        work()
        device.sync()
        once = max(time.perf_counter() - started, 1e-7)
        reps = int(max(1, min(TIMING_MAX_REPS[group], TIMING_TARGET[group] / once)))
        started = time.perf_counter()
        for _ in range(reps):
            work()
        device.sync()
        per_call = (time.perf_counter() - started) / reps
        return {"time_per_iter": per_call, "reps": reps, "flops": flops}

    def judge(self, error, precision, k):
        limit = tolerance(precision, k)
        return {
            "status": "ok" if error <= limit else "wrong",
            "max_error": error if error != float("inf") else None,
            "finite": error != float("inf"),
            "tolerance": limit,
            "precision": precision,
        }

    def fp32_precision(self, device):
        """fp32 matmuls run as TF32 on tensor cores when torch is told to allow it."""
        torch = self.torch
        if device.kind not in ("cuda", "rocm"):
            return "float32"
        try:
            if torch.backends.cuda.matmul.allow_tf32 or torch.get_float32_matmul_precision() != "highest":
                return "tf32"
        except Exception:
            pass
        return "float32"

    # -- the steps: each returns the fields of its record, or raises --

    def step_init(self, device, state):
        torch = self.torch
        x = torch.ones(16, device=device.device)
        x.add_(1)
        total = float(x.sum().item())
        device.sync()
        free, capacity = device.memory()
        size = self.size_for(device, free)
        state["size"] = size
        result = {
            "status": "ok" if total == 32.0 else "wrong",
            "size": size,
            "requested_size": self.requested or (GPU_SIZE if device.gpu else CPU_SIZE),
            "memory_free_bytes": free,
            "memory_total_bytes": capacity,
        }
        if total != 32.0:
            result["note"] = "ones(16) + 1 summed to %r instead of 32" % total
        device.reset_peak()
        return result

    def step_matmul_fp32(self, device, state):
        return self.matmul(device, state["size"], self.torch.float32, self.fp32_precision(device))

    def step_matmul_fp16(self, device, state):
        size = state["size"] if device.gpu else min(state["size"], CPU_HALF_MAX)
        return self.low_precision(device, size, self.torch.float16, "float16")

    def step_matmul_bf16(self, device, state):
        if device.supports("bfloat16") is False:
            raise StepSkipped("bfloat16 is not supported on this device")
        return self.low_precision(device, state["size"], self.torch.bfloat16, "bfloat16")

    def low_precision(self, device, n, dtype, precision):
        try:
            return self.matmul(device, n, dtype, precision)
        except Exception as exc:
            text = str(exc)
            if "CUDA error" not in text and any(word in text for word in UNSUPPORTED):
                raise StepSkipped(
                    "%s matmul not available here: %s" % (precision, first_line(text))
                ) from None
            raise

    def matmul(self, device, n, dtype, precision):
        a_cpu, b_cpu = self.matrices(n)
        reference = self.reference(n, exact=not device.gpu)
        a = a_cpu.to(device=device.device, dtype=dtype)
        b = b_cpu.to(device=device.device, dtype=dtype)
        product = a @ b
        device.sync()
        result = self.judge(normalized_error(self.picked(product, n), reference, n), precision, n)
        result["size"] = n
        result.update(self.timed(device, lambda: a @ b, 2.0 * n**3))
        return result

    def step_autograd(self, device, state):
        n = state["size"]
        a_cpu, b_cpu = self.matrices(n)
        a = a_cpu.to(device.device).requires_grad_(True)
        b = b_cpu.to(device.device).requires_grad_(True)
        (a @ b).sum().backward()
        device.sync()
        # For L = sum(A @ B): dL/dA = ones @ B^T (every row is B's row sums), dL/dB = A^T @ ones
        # (row j is A's column sum j everywhere).
        got_a, got_b = self.picked(a.grad, n), self.picked(b.grad, n)
        rows = self.rows(n)
        column_sums = a_cpu.double().sum(dim=0)
        if rows is not None:
            column_sums = column_sums[rows]
        expect_a = b_cpu.double().sum(dim=1).unsqueeze(0).expand(got_a.shape[0], n)
        expect_b = column_sums.unsqueeze(1).expand(got_b.shape[0], n)
        error = max(normalized_error(got_a, expect_a, n), normalized_error(got_b, expect_b, n))
        result = self.judge(error, self.fp32_precision(device), n)
        result["size"] = n

        def forward_backward():
            a.grad = None
            b.grad = None
            (a @ b).sum().backward()

        result.update(self.timed(device, forward_backward, 6.0 * n**3))
        return result

    def step_conv2d(self, device, state):
        torch = self.torch
        backend = device.conv_backend()
        if backend is None:
            raise StepSkipped("cuDNN is not available in this build")
        import torch.nn.functional as functional

        batch, channels, side, out_channels = (8, 32, 32, 64) if device.gpu else (2, 16, 16, 16)
        x_cpu = torch.randn(batch, channels, side, side, generator=self.generator)
        w_cpu = torch.randn(out_channels, channels, 3, 3, generator=self.generator)
        # Reference through im2col + matmul in fp64: a path that shares no code with conv kernels.
        columns = functional.unfold(x_cpu.double(), 3, padding=1)
        expected = (w_cpu.double().view(out_channels, -1) @ columns).view(batch, out_channels, side, side)
        x = x_cpu.to(device.device)
        w = w_cpu.to(device.device)
        out = functional.conv2d(x, w, padding=1)
        device.sync()
        k = channels * 9
        precision = "float32"
        if device.kind in ("cuda", "rocm") and torch.backends.cudnn.allow_tf32:
            precision = "tf32"
        result = self.judge(normalized_error(out.cpu(), expected, k), precision, k)
        result["note"] = backend
        flops = 2.0 * batch * out_channels * side * side * k
        result.update(self.timed(device, lambda: functional.conv2d(x, w, padding=1), flops))
        return result


def main(argv=None):
    started = time.time()
    options = parse_args(sys.argv[1:] if argv is None else argv)
    table = read_table(options["knowledge"])
    present = companions()
    info = {"installed": False, "companions": present, "errors": []}
    candidates = []
    info["distributions"] = distributions(extension_names(table), candidates)
    info["cuda_visible_devices"] = os.environ.get("CUDA_VISIBLE_DEVICES")
    info["dist_version"] = dist_version("torch")
    # Before the import: a crash in it still leaves what surrounds torch reported.
    emit("surroundings", surroundings())
    try:
        import importlib.util

        spec = importlib.util.find_spec("torch")
    except Exception as exc:
        spec = None
        info["errors"].append({"step": "find_spec", "error": short_error(exc)})
    if spec is None:
        emit("torch", info)
        report_extensions(candidates, table, None)
        return 0
    info["installed"] = True
    info["location"] = spec.origin
    stage("import")
    tee = sys.stderr = StderrTee(sys.stderr)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import_started = time.time()
        try:
            import torch
        except BaseException as exc:  # SystemExit and KeyboardInterrupt are facts here too
            sys.stderr = tee.stream
            failure = short_error(exc)
            failure["traceback"] = traceback.format_exc()[-4000:]
            info["import_error"] = failure
            info["warnings"] = [str(w.message)[:2000] for w in caught]
            info["numpy"] = numpy_facts(None, tee.text())
            emit("torch", info)
            report_extensions(candidates, table, info.get("location"))
            return 0
        sys.stderr = tee.stream
        info["import_seconds"] = time.time() - import_started
        collect(torch, info, info["errors"])
        collect_vendors(torch, info, info["errors"])
        info["numpy"] = numpy_facts(torch, tee.text())
    info["warnings"] = [str(w.message)[:2000] for w in caught]
    emit("torch", info)
    budget = options["budget"]
    deadline = started + budget - EXIT_MARGIN if budget else None
    # After the torch record, so that a companion that crashes or hangs the process still leaves
    # the build reported; before the smoke test, whose GPU steps take the rest of the budget.
    check_companions(torch, present, deadline)
    if options["smoke"]:
        Smoke(torch, info, options["size"], deadline).run()
    # Last: an extension built for another torch can abort the process (torchao), and what was
    # measured before is then already reported.
    extensions = report_extensions(candidates, table, info.get("location"))
    check_extensions(torch, extensions, deadline)
    return 0


def report_extensions(candidates, table, torch_file):
    extensions = []
    started = time.time()
    # The ones that require torch (or the table names) first: they are what the caps must keep.
    ordered = sorted(candidates, key=lambda c: not c[3])
    for dist, name, version, requires_torch in ordered[:MAX_CANDIDATES]:
        if len(extensions) >= MAX_EXTENSIONS or time.time() - started > EXAMINE_SECONDS:
            break
        try:
            entry = examine_extension(dist, name, version, requires_torch)
        except Exception as exc:  # one odd distribution must not cost the others
            entry = {"name": name, "version": version, "error": short_error(exc)}
        if entry is not None:
            extensions.append(entry)
    emit("extensions", {"extensions": extensions, "jit": jit_caches(table, torch_file)})
    return extensions


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Everything is reported; tearing torch down at interpreter exit would cost another ~0.25 s
    # (measured on the CPU build here) for nothing.
    os._exit(code)
