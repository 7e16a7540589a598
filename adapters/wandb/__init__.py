"""wandb adapter (not yet implemented: registers nothing)."""
