"""Suite-wide: no test reaches the network beyond 127.0.0.1.

`check` and `install` ask PyTorch's index and the configured ones whether they answer; here they
are told they are offline (ENVDOCTOR_OFFLINE, which the children the tests start inherit too).
Tests of reachability serve their own index on 127.0.0.1 and call the checks directly, or give a
FakeHost the answers.
"""

from __future__ import annotations

import os

os.environ.setdefault("ENVDOCTOR_OFFLINE", "1")
