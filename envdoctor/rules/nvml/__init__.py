"""Rules of the nvml area: the NVIDIA driver and GPUs NVML reports, and how this process reaches them."""

from __future__ import annotations

from envdoctor.rules.base import Rule, rules_in
from envdoctor.rules.nvml import (
    access,
    container,
    device_state,
    driver,
    driver_fabric,
    driver_module,
    jetson,
    mig,
    resources,
    wsl,
)

RULES: tuple[Rule, ...] = rules_in(
    driver, access, device_state, driver_module, driver_fabric, jetson, container, mig, wsl, resources
)
