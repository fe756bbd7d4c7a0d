"""The machine a benchmark ran on, in one line: what its figures need next to them."""

from __future__ import annotations

import contextlib
import os
import platform
from pathlib import Path


def describe(device: str = "cpu") -> str:
    """``x86_64, 2 cores``, with the CPU's name, AVX-512 where /proc/cpuinfo says so, and the
    CTranslate2 kernels when they are forced to another family (``CT2_FORCE_CPU_ISA``, as
    packaging/test-other-isa.sh does); for a CUDA ``device``, the GPU's name first."""
    text = ""
    with contextlib.suppress(OSError):
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    name = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")), "")
    avx512 = any(line.startswith("flags") and " avx512f" in line for line in text.splitlines())
    forced = os.environ.get("CT2_FORCE_CPU_ISA", "")
    gpu = ""
    if device.startswith("cuda"):
        with contextlib.suppress(Exception):  # PyTorch names the card where it is installed
            import torch

            gpu = f"{torch.cuda.get_device_name(0)} (CUDA)"
    return ", ".join(x for x in (gpu, f"{platform.machine()}, {os.cpu_count()} cores", name,
                                 "AVX-512" if avx512 else "",
                                 f"CTranslate2 kernels forced to {forced}" if forced else "") if x)
