"""`envdoctor fix`: apply the install fixes of the current findings to the examined interpreter.

selection.py picks the runnable install commands out of a report, changes.py says what they do to
the installed packages, state.py records what is installed (and from where) before anything
changes, restore.py turns a recorded state back into commands, and runner.py does it all in order
through the Host seam: check, show, confirm, record, run, check again, restore when worse.
"""
