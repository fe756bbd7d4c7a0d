"""Caption sessions: the engines built from settings, the caption loop, its journal and
summary, the long-lived service behind the app, and the history of past sessions."""

from .engines import create_asr_engine, create_translator
from .history import CaptionHistory, read_session
from .pipeline import CaptionPipeline, MessageLevel, NullListener, PipelineListener
from .service import CaptionService, ServiceListener, ServiceState
from .summary import RunSummary

__all__ = [
    "CaptionHistory",
    "CaptionPipeline",
    "CaptionService",
    "MessageLevel",
    "NullListener",
    "PipelineListener",
    "RunSummary",
    "ServiceListener",
    "ServiceState",
    "create_asr_engine",
    "create_translator",
    "read_session",
]
