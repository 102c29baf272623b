"""Rules of the nvml area: the NVIDIA driver and GPUs NVML reports."""

from __future__ import annotations

from envdoctor.rules.base import Rule
from envdoctor.rules.nvml import driver

RULES: tuple[Rule, ...] = (*driver.RULES,)
