"""Runs in envdoctor's own interpreter: asks NVML for each GPU's state, prints one JSON line.

Compute mode and the processes holding a CUDA context (a GPU in exclusive-process mode admits one),
MIG mode and the MIG devices created, retired pages and remapped rows waiting for a reboot or reset.
Each query may be missing from an old pynvml or answer NotSupported on a GPU without the feature:
that is recorded per GPU, never raised. A child of its own, as the NVML probe's, so a driver that
hangs or crashes cannot take envdoctor down. Standard library plus pynvml (from nvidia-ml-py).

The arguments are the NVIDIA device files that exist: each is stat()ed and checked with access(2)
for this process (whose uid and groups are reported too), before and whether or not NVML answers,
as a file this user may not open is exactly when NVML says "Insufficient Permissions".
"""

import json
import os
import sys

NOT_SUPPORTED = 3  # NVML_ERROR_NOT_SUPPORTED (nvml.h)
NOT_FOUND = 6  # NVML_ERROR_NOT_FOUND: an empty MIG slot


def device_nodes(paths):
    nodes = []
    for path in paths:
        node = {"path": path}
        try:
            st = os.stat(path)
        except OSError as exc:
            node["error"] = "%s: %s" % (type(exc).__name__, exc.strerror or exc)
            nodes.append(node)
            continue
        node["mode"] = st.st_mode & 0o7777
        node["uid"] = st.st_uid
        node["gid"] = st.st_gid
        node["major"] = os.major(st.st_rdev)
        node["minor"] = os.minor(st.st_rdev)
        node["usable"] = os.access(path, os.R_OK | os.W_OK)
        try:
            import grp

            node["group"] = grp.getgrgid(st.st_gid).gr_name
        except (ImportError, KeyError):
            pass  # a gid the container's /etc/group does not name: the number says it
        nodes.append(node)
    return nodes


def identity():
    try:
        return {"uid": os.getuid(), "gid": os.getgid(), "groups": sorted(set(os.getgroups()) | {os.getgid()})}
    except (AttributeError, OSError):
        return {}


CONTEXT = {}


def emit(data):
    data["record"] = "gpu_state"
    data.update(CONTEXT)
    sys.stdout.write(json.dumps(data, sort_keys=True) + "\n")
    sys.stdout.flush()


def text(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


class Asker(object):
    """Calls one NVML query by name; records what it could not answer."""

    def __init__(self, pynvml, gpu):
        self.pynvml = pynvml
        self.gpu = gpu

    def __call__(self, name, *args):
        function = getattr(self.pynvml, name, None)
        if function is None:
            self.gpu["unavailable"].append(name)
            return None
        try:
            return function(*args)
        except self.pynvml.NVMLError as exc:
            if getattr(exc, "value", None) == NOT_SUPPORTED:
                self.gpu["unsupported"].append(name)
            else:
                self.gpu["errors"].append("%s: %s" % (name, text(exc)))
            return None
        except Exception as exc:  # a binding that does not match the library: say so, go on
            self.gpu["errors"].append("%s: %s: %s" % (name, type(exc).__name__, exc))
            return None


def state(pynvml, index):
    gpu = {"index": index, "unavailable": [], "unsupported": [], "errors": []}
    ask = Asker(pynvml, gpu)
    handle = ask("nvmlDeviceGetHandleByIndex", index)
    if handle is None:
        return gpu
    uuid = ask("nvmlDeviceGetUUID", handle)
    if uuid is not None:
        gpu["uuid"] = text(uuid)
    mode = ask("nvmlDeviceGetComputeMode", handle)
    if mode is not None:
        gpu["compute_mode"] = int(mode)
    processes = ask("nvmlDeviceGetComputeRunningProcesses", handle)
    if processes is not None:
        gpu["processes"] = sorted(int(getattr(p, "pid", 0)) for p in processes)
    mig = ask("nvmlDeviceGetMigMode", handle)
    if mig is not None:
        current, pending = mig
        gpu["mig_current"] = bool(current)
        gpu["mig_pending"] = bool(pending)
        if current:
            gpu["mig_devices"] = mig_devices(pynvml, ask, handle)
    pending_pages = ask("nvmlDeviceGetRetiredPagesPendingStatus", handle)
    if pending_pages is not None:
        gpu["retired_pages_pending"] = bool(pending_pages)
    rows = ask("nvmlDeviceGetRemappedRows", handle)
    if rows is not None and len(rows) >= 4:
        gpu["remapped_rows_pending"] = bool(rows[2])
        gpu["remapped_rows_failed"] = bool(rows[3])
    return gpu


def mig_devices(pynvml, ask, handle):
    count = ask("nvmlDeviceGetMaxMigDeviceCount", handle) or 0
    found = []
    for slot in range(int(count)):
        try:
            device = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, slot)
        except pynvml.NVMLError as exc:
            if getattr(exc, "value", None) != NOT_FOUND:  # an empty slot: no MIG device there
                ask.gpu["errors"].append("nvmlDeviceGetMigDeviceHandleByIndex: %s" % text(exc))
            continue
        except Exception:
            break
        uuid = ask("nvmlDeviceGetUUID", device)
        if uuid is not None:
            found.append(text(uuid))
        # What a device plugin asks of each MIG device; without the MIG monitor capability in a
        # container it answers Insufficient Permissions.
        ask("nvmlDeviceGetMemoryInfo", device)
    return found


def main():
    CONTEXT["nodes"] = device_nodes(sys.argv[1:])
    CONTEXT["process"] = identity()
    try:
        import pynvml
    except Exception as exc:
        emit({"status": "pynvml_missing", "error": "%s: %s" % (type(exc).__name__, exc)})
        return 0
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        emit({"status": "error", "error": "%s: %s" % (type(exc).__name__, text(exc))})
        return 0
    data = {"status": "ok", "gpus": []}
    try:
        count = int(pynvml.nvmlDeviceGetCount())
    except pynvml.NVMLError as exc:
        data["status"] = "error"
        data["error"] = "device count: %s" % text(exc)
        count = 0
    for index in range(count):
        data["gpus"].append(state(pynvml, index))
    try:
        pynvml.nvmlShutdown()
    except pynvml.NVMLError:
        pass
    emit(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
