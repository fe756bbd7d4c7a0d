"""One compute gate for all models on the CPU.

On a small CPU, running the speech model and the translator at the same time
with all cores each oversubscribes it: measured on 2 cores, a tiny.en decode
went from 0.5 s to 2.3 s while Gemma 270M translated alongside. Engines
therefore take :data:`COMPUTE_GATE` around each model call: one model computes
at a time with every core, and the other waits (a condition, never a sleep).
"""

from __future__ import annotations

import os
import threading

# OpenMP runtimes (CTranslate2's) spin-wait after each call by default, stealing the
# cores from the next model; passive waiting hands them over at once.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("KMP_BLOCKTIME", "0")

COMPUTE_GATE = threading.Lock()


def cuda_available() -> bool:
    """True when CTranslate2 sees a CUDA device (the speech models can run there)."""
    try:
        import ctranslate2

        return ctranslate2.get_cuda_device_count() > 0
    except Exception:
        return False
