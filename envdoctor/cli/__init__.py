"""The command line: one module per command; flags -> session -> renderer -> exit code."""
