"""Agent-side middleware that reports what it changes to the run journal."""
