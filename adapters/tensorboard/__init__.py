"""tensorboard adapter (not yet implemented: registers nothing)."""
