"""trajectory adapter (not yet implemented: registers nothing)."""
