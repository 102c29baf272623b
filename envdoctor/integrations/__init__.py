"""envdoctor where projects already are: pytest, notebooks (see also action.yml and
.pre-commit-hooks.yaml at the repository's root)."""
