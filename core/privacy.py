"""Nothing leaves the machine: the telemetry switches of the libraries Sotto loads, turned off
before any of them starts.

Found by tests/test_privacy.py (every connection attempt of a real session, native code
included): ONNX Runtime 1.29 and later, which runs the Silero voice-activity model, sends usage
events to ``mobile.events.data.microsoft.com`` from Linux and macOS and keeps a device identifier
under ``~/.cache/Microsoft`` unless told not to before it initializes. A switch the user has set
themselves is left as it is.
"""

from __future__ import annotations

import os

TELEMETRY_OFF = {
    "ORT_DISABLE_TELEMETRY": "1",  # ONNX Runtime (POSIX 1DS telemetry): no uploader, no device id
    "ORT_TELEMETRY_DISABLED": "1",  # the same opt-out under the name later releases read
    "HF_HUB_DISABLE_TELEMETRY": "1",  # huggingface_hub, if a library imports it
}


def telemetry_off() -> None:
    """Set every switch in :data:`TELEMETRY_OFF` the environment does not already set."""
    for key, value in TELEMETRY_OFF.items():
        os.environ.setdefault(key, value)
