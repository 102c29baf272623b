"""Runs inside the *target* interpreter: imports torch once and prints what it finds as JSON lines.

Standard library only, and old syntax, because it runs in whatever Python the user has. Each
record is one JSON object on its own line, flushed at once, so that a crash or hang part-way still
leaves the records printed before it. Records: {"record": "stage", ...} before each risky step,
then one {"record": "torch", ...}.
"""

import json
import os
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


def main():
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
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        started = time.time()
        try:
            import torch
        except BaseException as exc:  # SystemExit and KeyboardInterrupt are facts here too
            failure = short_error(exc)
            failure["traceback"] = traceback.format_exc()[-4000:]
            info["import_error"] = failure
            info["warnings"] = [str(w.message)[:2000] for w in caught]
            emit("torch", info)
            return 0
        info["import_seconds"] = time.time() - started
        collect(torch, info, info["errors"])
    info["warnings"] = [str(w.message)[:2000] for w in caught]
    emit("torch", info)
    return 0


if __name__ == "__main__":
    sys.exit(main())
