"""mlflow adapter (not yet implemented: registers nothing)."""
