"""Suite-wide: envdoctor's cache (the rule catalogue) goes to a temporary folder, not the user's, and
no test reaches the network beyond 127.0.0.1.

`check` and `install` ask PyTorch's index and the configured ones whether they answer; here they
are told they are offline (ENVDOCTOR_OFFLINE, which the children the tests start inherit too).
Tests of reachability serve their own index on 127.0.0.1 and call the checks directly, or give a
FakeHost the answers.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

os.environ.setdefault("ENVDOCTOR_OFFLINE", "1")


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    # Set in os.environ so that the CLI subprocesses the tests start inherit it too.
    before = os.environ.get("ENVDOCTOR_CACHE_DIR")
    os.environ["ENVDOCTOR_CACHE_DIR"] = str(tmp_path_factory.mktemp("envdoctor-cache"))
    yield
    if before is None:
        os.environ.pop("ENVDOCTOR_CACHE_DIR", None)
    else:
        os.environ["ENVDOCTOR_CACHE_DIR"] = before
