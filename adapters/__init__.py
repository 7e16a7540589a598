"""rundiff's built-in adapters, installed as `rundiff_adapters` (one plugin module each)."""
