"""Audio input: files, microphone, system audio (loopback), ring buffer, voice activity."""

from .convert import SAMPLE_RATE
from .decode import decode_file
from .loopback import OutputDevice, SystemAudioSource, list_output_devices, open_system_source, system_audio_unavailable
from .ringbuffer import RingBuffer
from .sources import (
    AudioSource,
    FileSource,
    InputDevice,
    MicrophoneSource,
    find_input_device,
    list_input_devices,
    open_source,
)
from .vad import VadEvent, VadOptions, VoiceActivityDetector

__all__ = [
    "SAMPLE_RATE",
    "AudioSource",
    "FileSource",
    "InputDevice",
    "MicrophoneSource",
    "OutputDevice",
    "RingBuffer",
    "SystemAudioSource",
    "VadEvent",
    "VadOptions",
    "VoiceActivityDetector",
    "decode_file",
    "find_input_device",
    "list_input_devices",
    "list_output_devices",
    "open_source",
    "open_system_source",
    "system_audio_unavailable",
]
