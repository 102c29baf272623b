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


def distributions():
    """Each installed distribution that requires a watched one, or is one: None before Python 3.8."""
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
        for requirement in requires:
            match = REQUIREMENT_NAME.match(requirement)
            if match and watched(match.group(1)):
                pins.append(requirement[:300])
        if not pins and not watched(name):
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
    if "NumPy" in printed:
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
    options = {"smoke": True, "size": None, "budget": None}
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--no-smoke":
            options["smoke"] = False
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
    present = companions()
    info = {"installed": False, "companions": present, "errors": []}
    info["distributions"] = distributions()
    info["cuda_visible_devices"] = os.environ.get("CUDA_VISIBLE_DEVICES")
    info["dist_version"] = dist_version("torch")
    try:
        import importlib.util

        spec = importlib.util.find_spec("torch")
    except Exception as exc:
        spec = None
        info["errors"].append({"step": "find_spec", "error": short_error(exc)})
    if spec is None:
        emit("torch", info)
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
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Everything is reported; tearing torch down at interpreter exit would cost another ~0.25 s
    # (measured on the CPU build here) for nothing.
    os._exit(code)
