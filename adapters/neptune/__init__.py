"""neptune adapter (not yet implemented: registers nothing)."""
