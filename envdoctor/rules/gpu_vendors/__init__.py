"""Rules of the gpu_vendors area: Apple (MPS), AMD (ROCm) and Intel (XPU) GPUs and the torch build
that should serve them. Codes ED140-ED159 (the driver-and-GPU hundred, beside NVIDIA's ED1xx)."""

from __future__ import annotations

from envdoctor.rules.base import Rule, rules_in
from envdoctor.rules.gpu_vendors import access, apple, rocm, xpu

RULES: tuple[Rule, ...] = rules_in(apple, rocm, access, xpu)
