"""Rules of the environment area: the variables that steer CUDA and torch, as the environment
probe read them (CUDA_VISIBLE_DEVICES, CUDA_LAUNCH_BLOCKING, CUDA_DEVICE_ORDER, the allocator's
PYTORCH_CUDA_ALLOC_CONF / PYTORCH_ALLOC_CONF). Codes ED160-ED169.

A variable is often set by a script rather than the shell (`export` in a run script,
`os.environ[...] = ...` in train.py): a fix names the variable and both places.
"""

from __future__ import annotations

from envdoctor.rules.base import Rule, rules_in
from envdoctor.rules.environment import allocator, device_order, launch_blocking, visible_devices

RULES: tuple[Rule, ...] = rules_in(visible_devices, launch_blocking, device_order, allocator)
