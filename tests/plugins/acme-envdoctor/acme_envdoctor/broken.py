"""An entry point whose import fails, as a plugin's does when what it imports has moved."""

from acme_envdoctor import removed_in_acme_2  # noqa: F401  (there is no such module)
