"""`envdoctor update`: refresh the release data from the package indexes into the user's overlay.

http.py fetches (bounded, parallel, short timeouts), simple_index.py reads PEP 503/691 pages,
wheels.py reads wheel file names and PEP 658 metadata, refresh.py assembles the overlay. Nothing
here is imported by `check` or `install`: they read the overlay through envdoctor.knowledge.overlay.
"""
