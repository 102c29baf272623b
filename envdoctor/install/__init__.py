"""`envdoctor install`: which torch build fits a machine, and the commands that install it.

Pure (no I/O, only the knowledge base): `plan` chooses the release and variant, `commands` says it
for pip, uv and conda, `request` checks the options. I/O: `detect` reads the machine through the
Host, `session` ties options and detection to a plan for the CLI.
"""
