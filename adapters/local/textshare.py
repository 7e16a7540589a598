"""How much of a file a text grammar must read to claim it (shape and Markdown both ask)."""

#: A text grammar claims a file only when this share of its non-blank lines are its records:
#: 36 Python-dict lines in a 5,207-line SLURM log of a Ray Tune search are not that log's
#: content (the HF Trainer logs rundiff reads hold 3.7–40% records; nanoGPT/llm.c logs 92–100%).
MIN_RECORD_SHARE = 0.02
