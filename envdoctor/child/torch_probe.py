"""Runs inside the *target* interpreter: imports torch once, reports the build, then smoke-tests it.

Standard library only (plus torch), and old syntax, because it runs in whatever Python the user
has. Each record is one JSON object on its own line, flushed at once, so that a crash or hang
part-way still leaves the records printed before it. Records: {"record": "stage", ...} before each
risky step, one {"record": "torch", ...} with the build, then the smoke test's records:
"smoke" (start/end), "smoke_device" (start/end), and "step_start" before / "step" after each step.
A "step_start" without its "step" names the step that hung or crashed.

Arguments: --no-smoke, --smoke-size N (matrix size), --budget SECONDS (the parent's timeout).
"""

import faulthandler
import json
import math
import os
import platform
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


def companions():
    found = []
    for name in ("torchvision", "torchaudio"):
        version = dist_version(name)
        if version is not None:
            found.append({"name": name, "version": version})
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
        self.kind = kind  # cpu, cuda, rocm, mps
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
        elif self.kind == "mps":
            self.torch.mps.synchronize()

    def memory(self):
        """(free, total) bytes on the device, or (None, None) where it cannot say."""
        torch = self.torch
        try:
            if self.kind in ("cuda", "rocm"):
                free, total = torch.cuda.mem_get_info(self.device)
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
        if self.kind in ("cuda", "rocm"):
            try:
                self.torch.cuda.reset_peak_memory_stats(self.device)
            except Exception:
                pass

    def peak(self):
        try:
            if self.kind in ("cuda", "rocm"):
                return int(self.torch.cuda.max_memory_allocated(self.device))
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
    info = {"installed": False, "companions": companions(), "errors": []}
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
        info["numpy"] = numpy_facts(torch, tee.text())
    info["warnings"] = [str(w.message)[:2000] for w in caught]
    emit("torch", info)
    if options["smoke"]:
        budget = options["budget"]
        deadline = started + budget - EXIT_MARGIN if budget else None
        Smoke(torch, info, options["size"], deadline).run()
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Everything is reported; tearing torch down at interpreter exit would cost another ~0.25 s
    # (measured on the CPU build here) for nothing.
    os._exit(code)
