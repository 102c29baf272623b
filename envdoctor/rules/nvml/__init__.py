"""Rules of the nvml area: the NVIDIA driver and GPUs NVML reports."""

from __future__ import annotations

from envdoctor.rules.base import Rule, rules_in
from envdoctor.rules.nvml import driver

RULES: tuple[Rule, ...] = rules_in(driver)
