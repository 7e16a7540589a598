"""Write the committed Hugging Face Trainer fixture (tests/fixtures/hf_trainer/) with the real
`transformers.Trainer`.

transformers is too heavy for every CI run, so the files are written once and committed with this
script and the version (transformers 5.23.0, torch from the project's constraints, CPU):

    pip install --target /tmp/hfpkgs transformers==5.23.0
    pip install --target /tmp/hfpkgs2 --no-deps accelerate==1.15.0   # Trainer needs it
    PYTHONPATH=/tmp/hfpkgs:/tmp/hfpkgs2 .venv/bin/python scripts/make_hf_trainer_fixtures.py

A tiny GPT-2 built from a config (no download), 12 optimiser steps on random token ids, a log every
2 steps, an evaluation and a checkpoint every 4: `checkpoint-4/8/12/` each with the
`trainer_state.json` Trainer writes (model weights are dropped: only the JSON files are kept).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "hf_trainer"
KEEP = ("trainer_state.json", "config.json", "generation_config.json")


def main() -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    import torch
    import transformers
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

    torch.manual_seed(0)
    run = Path("/tmp/hf-trainer-run")
    if run.exists():
        shutil.rmtree(run)
    config = GPT2Config(vocab_size=64, n_positions=16, n_embd=16, n_layer=1, n_head=2)
    model = GPT2LMHeadModel(config)

    class Tokens(torch.utils.data.Dataset):
        def __init__(self, n: int, seed: int) -> None:
            g = torch.Generator().manual_seed(seed)
            self.ids = torch.randint(0, 64, (n, 16), generator=g)

        def __len__(self) -> int:
            return len(self.ids)

        def __getitem__(self, i: int) -> dict:
            return {"input_ids": self.ids[i], "labels": self.ids[i]}

    args = TrainingArguments(
        output_dir=str(run), max_steps=12, per_device_train_batch_size=4,
        per_device_eval_batch_size=4, logging_steps=2, eval_strategy="steps", eval_steps=4,
        save_steps=4, save_strategy="steps", report_to=[], use_cpu=True, seed=0,
        learning_rate=1e-3, disable_tqdm=True,
    )
    trainer = Trainer(model=model, args=args, train_dataset=Tokens(64, 1), eval_dataset=Tokens(16, 2))
    trainer.train()
    if OUT.exists():
        shutil.rmtree(OUT)
    for ckpt in sorted(run.glob("checkpoint-*")):
        dest = OUT / "run" / ckpt.name
        dest.mkdir(parents=True)
        for name in KEEP:
            if (ckpt / name).is_file():
                shutil.copy2(ckpt / name, dest / name)
    (OUT / "VERSION").write_text(f"transformers {transformers.__version__}, torch {torch.__version__}\n")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
