"""Runs inside the *target* interpreter for `envdoctor report`: the C library and the installed
packages a bug report needs (torch*, numpy, triton, nvidia-*), read from their metadata.

Standard library only, old syntax: it runs in whatever Python the user has. Nothing is imported
but the standard library, so it is quick and cannot crash on a broken package.
"""

import json
import platform
import sys

PREFIXES = ("torch", "numpy", "triton", "nvidia-", "pytorch-triton", "intel-openmp", "mkl")


def wanted(name):
    name = name.lower().replace("_", "-")
    return any(name.startswith(prefix) for prefix in PREFIXES)


def packages():
    try:
        from importlib import metadata  # Python 3.8+
    except ImportError:
        return []
    found = {}
    for dist in metadata.distributions():
        try:
            name = dist.metadata["Name"]
            version = dist.version
        except Exception:
            continue
        if name and wanted(name) and name.lower() not in found:
            found[name.lower()] = {"name": name, "version": version}
    return [found[key] for key in sorted(found)]


def main():
    try:
        libc, libc_version = platform.libc_ver()
    except Exception:
        libc, libc_version = "", ""
    data = {
        "record": "packages",
        "libc": ("%s %s" % (libc, libc_version)).strip() or None,
        "packages": packages(),
    }
    sys.stdout.write(json.dumps(data, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
