"""Who is speaking: a voice encoder (GE2E, numpy) and online speaker labels for committed lines."""

from .encoder import EncoderOptions, VoiceEncoder
from .tracker import SpeakerTracker, TrackerOptions

__all__ = ["EncoderOptions", "SpeakerTracker", "TrackerOptions", "VoiceEncoder"]
