"""Runs inside the target interpreter: every installed distribution, its version and its source.

`envdoctor fix` records this before it changes anything, so that it can put back what was there.
Standard library only, old syntax: it must run on any Python a user points envdoctor at.
"""

import json
import sys


def _source(dist):
    """(installer, url, editable): who installed it and, for a direct install, from where."""
    installer = dist.read_text("INSTALLER")
    url, editable = None, False
    direct = dist.read_text("direct_url.json")
    if direct:
        try:
            data = json.loads(direct)
        except ValueError:
            data = {}
        if isinstance(data, dict):
            url = data.get("url")
            editable = bool((data.get("dir_info") or {}).get("editable"))
    return (installer.strip() if installer else None), url, editable


def main():
    try:
        from importlib import metadata
    except ImportError:
        error = {"record": "error", "error": "importlib.metadata needs Python 3.8+"}
        sys.stdout.write(json.dumps(error) + "\n")
        return 0
    seen = set()
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if not name:
            continue
        key = name.lower().replace("_", "-").replace(".", "-")
        if key in seen:  # the same name later on sys.path: the first is the one imported
            continue
        seen.add(key)
        installer, url, editable = _source(dist)
        record = {
            "record": "dist",
            "name": name,
            "version": dist.version,
            "installer": installer,
            "url": url,
            "editable": editable,
        }
        sys.stdout.write(json.dumps(record, sort_keys=True) + "\n")
    sys.stdout.write(json.dumps({"record": "done", "executable": sys.executable}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
