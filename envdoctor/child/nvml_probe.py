"""Runs in envdoctor's own interpreter: asks NVML about the driver and GPUs, prints one JSON line.

A child process of its own so that a driver library that hangs or crashes cannot take envdoctor
down with it. Standard library plus pynvml (from nvidia-ml-py).
"""

import json
import sys

# NVML_ERROR_* codes (nvml.h) that mean distinct situations to the user.
STATUS_BY_CODE = {
    12: "library_not_found",
    9: "driver_not_loaded",
    18: "version_mismatch",
    4: "no_permission",
}


def fabric_state(pynvml, handle):
    """The GPU's NVLink fabric state (0 not supported, 1 not started, 2 in progress, 3 completed);
    None where this pynvml or driver cannot say. An NVSwitch system runs no CUDA until it is 3."""
    query = getattr(pynvml, "nvmlDeviceGetGpuFabricInfo", None)
    struct = getattr(pynvml, "c_nvmlGpuFabricInfo_t", None)
    if query is None or struct is None:
        return None
    try:
        info = struct()
        query(handle, info)
        return int(info.state)
    except Exception:  # NotSupported, an older driver, another pynvml signature: not a fact
        return None


def emit(data):
    data["record"] = "nvml"
    sys.stdout.write(json.dumps(data, sort_keys=True) + "\n")
    sys.stdout.flush()


def text(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def main():
    try:
        import pynvml
    except Exception as exc:
        emit({"status": "pynvml_missing", "error": "%s: %s" % (type(exc).__name__, exc)})
        return 0
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        code = getattr(exc, "value", None)
        emit({"status": STATUS_BY_CODE.get(code, "error"), "error": text(exc), "code": code})
        return 0
    except OSError as exc:
        emit({"status": "library_not_found", "error": str(exc)})
        return 0
    data = {"status": "ok", "gpus": [], "errors": []}
    try:
        data["driver_version"] = text(pynvml.nvmlSystemGetDriverVersion())
    except pynvml.NVMLError as exc:
        data["errors"].append("driver version: %s" % text(exc))
    getter = getattr(pynvml, "nvmlSystemGetCudaDriverVersion_v2", None)
    for get in (getter, pynvml.nvmlSystemGetCudaDriverVersion):
        if get is None:
            continue
        try:
            data["cuda_driver_version"] = int(get())
            break
        except pynvml.NVMLError as exc:
            data["errors"].append("CUDA driver version: %s" % text(exc))
    try:
        count = pynvml.nvmlDeviceGetCount()
    except pynvml.NVMLError as exc:
        data["errors"].append("device count: %s" % text(exc))
        count = 0
    for index in range(count):
        gpu = {"index": index}
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            gpu["name"] = text(pynvml.nvmlDeviceGetName(handle))
            major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
            gpu["capability"] = [int(major), int(minor)]
            gpu["memory_total_bytes"] = int(pynvml.nvmlDeviceGetMemoryInfo(handle).total)
            state = fabric_state(pynvml, handle)
            if state is not None:
                gpu["fabric_state"] = state
        except pynvml.NVMLError as exc:
            data["errors"].append("GPU %d: %s" % (index, text(exc)))
        data["gpus"].append(gpu)
    try:
        pynvml.nvmlShutdown()
    except pynvml.NVMLError:
        pass
    emit(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
