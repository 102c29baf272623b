"""envdoctor rules and a probe for the ACME training stack (a test plugin)."""
