"""parquet adapter (not yet implemented: registers nothing)."""
