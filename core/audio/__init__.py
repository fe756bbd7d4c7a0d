"""Audio input: files, microphone, ring buffer, voice activity."""

from .decode import SAMPLE_RATE, decode_file
from .ringbuffer import RingBuffer
from .sources import AudioSource, FileSource, InputDevice, MicrophoneSource, find_input_device, list_input_devices, open_source
from .vad import VadEvent, VadOptions, VoiceActivityDetector

__all__ = [
    "SAMPLE_RATE",
    "AudioSource",
    "FileSource",
    "InputDevice",
    "MicrophoneSource",
    "RingBuffer",
    "VadEvent",
    "VadOptions",
    "VoiceActivityDetector",
    "decode_file",
    "find_input_device",
    "list_input_devices",
    "open_source",
]
