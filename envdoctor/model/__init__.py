"""The types every layer shares: facts, findings, reports (at the bottom: imports nothing above it)."""
