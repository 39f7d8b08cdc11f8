"""Agent-side middleware that reports what it changes to the run journal."""

from middleware.summarization import SUMMARIZATION_EVENT, TrackingSummarizationMiddleware

__all__ = ["SUMMARIZATION_EVENT", "TrackingSummarizationMiddleware"]
