"""Reading journaled threads: the timeline, replay, the HTTP app and the CLI."""
