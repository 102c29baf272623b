"""Runs inside the target interpreter: says what kind of Python and environment it is.

Standard library only, old syntax: it must run on any Python a user points envdoctor at.
"""

import json
import os
import platform
import re
import struct
import sys

SYSTEM_VERSION = "/System/Library/CoreServices/SystemVersion.plist"


def mac_version():
    """The macOS version this interpreter is told, as platform.mac_ver() reads it, without
    importing plistlib: the file is small and its ProductVersion is one <string>."""
    if sys.platform != "darwin":
        return None
    try:
        with open(SYSTEM_VERSION) as handle:
            text = handle.read(65536)
    except (IOError, OSError):
        return None
    found = re.search(r"<key>ProductVersion</key>\s*<string>([0-9.]{1,20})</string>", text)
    return found.group(1) if found else None


def main():
    base_prefix = getattr(sys, "base_prefix", getattr(sys, "real_prefix", sys.prefix))
    data = {
        "record": "python",
        "executable": sys.executable,
        "version": "%d.%d.%d" % sys.version_info[:3],
        "implementation": platform.python_implementation(),
        "bits": struct.calcsize("P") * 8,
        "prefix": sys.prefix,
        "is_venv": sys.prefix != base_prefix,
        "is_conda": os.path.isdir(os.path.join(sys.prefix, "conda-meta")),
        "free_threaded": bool(getattr(sys, "_is_gil_enabled", lambda: True)() is False),
        "machine": platform.machine(),
        "mac_version": mac_version(),
    }
    sys.stdout.write(json.dumps(data, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
