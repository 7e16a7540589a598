"""Write the committed mmengine fixtures (tests/fixtures/mmengine-written/) with mmengine's real
`Runner`, `LoggerHook` and `LocalVisBackend` on a toy classifier (CPU, seconds).

mmengine pulls opencv and torch, so it is not a test dependency: the files are written once, in a
throwaway venv, and committed with this script and the version:

    python3 -m venv /tmp/mmenv && /tmp/mmenv/bin/pip install torch==2.13.0 mmengine
    /tmp/mmenv/bin/python scripts/make_mmengine_fixtures.py

Three work dirs (each `work_dirs/<name>/` holds the `<name>.py` the Runner dumps, and one
`<timestamp>/` folder per launch with `<timestamp>.log`, `vis_data/scalars.json`,
`vis_data/<timestamp>.json` and `vis_data/config.py`):

- `toy_cls_lr0.1`: EpochBasedTrainLoop, 4 epochs, val every epoch (val rows' step = epoch). The
  first launch crashes in epoch 3 (a hook raises at iteration 23, after the rows of 18, 20, 22); the second is started with
  `resume=True` and resumes from `epoch_2.pth`, so it logs epoch 3 again: two launches whose
  train steps overlap (18, 20, 22).
  Its CheckpointHook declares `save_best='accuracy/top1', rule='greater'`.
- `toy_cls_lr0.05`: the same config with lr 0.05, one launch.
- `toy_iter`: IterBasedTrainLoop, 30 iterations, val every 10, `LoggerHook(log_metric_by_epoch=
  False)` and `log_processor.by_epoch=False`: val rows' step = iteration; `save_best='auto'`
  (no rule: mmengine infers it from the first metric's name).

Checkpoints (`*.pth`) are deleted before copying; `last_checkpoint` (a text file) is kept.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "mmengine-written"

CONFIG = """\
model = dict(type='ToyClassifier', in_dim=8, num_classes=3)
train_dataloader = dict(
    batch_size=8,
    dataset=dict(type='ToyDataset', n=64, seed=0),
    sampler=dict(type='DefaultSampler', shuffle=True),
    collate_fn=dict(type='default_collate'),
    num_workers=0)
val_dataloader = dict(
    batch_size=16,
    dataset=dict(type='ToyDataset', n=32, seed=1),
    sampler=dict(type='DefaultSampler', shuffle=False),
    collate_fn=dict(type='default_collate'),
    num_workers=0)
val_evaluator = dict(type='ToyAccuracy')
optim_wrapper = dict(optimizer=dict(type='SGD', lr={lr}, momentum=0.9))
param_scheduler = [dict(type='MultiStepLR', by_epoch=True, milestones=[3], gamma=0.1)]
max_epochs = 4
train_cfg = dict(by_epoch=True, max_epochs=max_epochs, val_interval=1)
val_cfg = dict()
default_hooks = dict(
    logger=dict(type='LoggerHook', interval=2),
    checkpoint=dict(type='CheckpointHook', interval=1, save_best='accuracy/top1', rule='greater'))
custom_hooks = [dict(type='CrashOnceHook')]
randomness = dict(seed=0)
work_dir = 'work_dirs/{name}'
"""

ITER_CONFIG = """\
model = dict(type='ToyClassifier', in_dim=8, num_classes=3)
train_dataloader = dict(
    batch_size=8,
    dataset=dict(type='ToyDataset', n=64, seed=0),
    sampler=dict(type='InfiniteSampler', shuffle=True),
    collate_fn=dict(type='default_collate'),
    num_workers=0)
val_dataloader = dict(
    batch_size=16,
    dataset=dict(type='ToyDataset', n=32, seed=1),
    sampler=dict(type='DefaultSampler', shuffle=False),
    collate_fn=dict(type='default_collate'),
    num_workers=0)
val_evaluator = dict(type='ToyAccuracy')
optim_wrapper = dict(optimizer=dict(type='SGD', lr=0.1, momentum=0.9))
max_iters = 30
train_cfg = dict(type='IterBasedTrainLoop', max_iters=max_iters, val_interval=10)
val_cfg = dict()
log_processor = dict(by_epoch=False)
default_hooks = dict(
    logger=dict(type='LoggerHook', interval=5, log_metric_by_epoch=False),
    checkpoint=dict(type='CheckpointHook', interval=10, by_epoch=False, save_best='auto'))
randomness = dict(seed=0)
work_dir = 'work_dirs/{name}'
"""


def _register() -> None:
    import torch
    from mmengine.evaluator import BaseMetric
    from mmengine.hooks import Hook
    from mmengine.model import BaseModel
    from mmengine.registry import DATASETS, HOOKS, METRICS, MODELS
    from torch.utils.data import Dataset

    @MODELS.register_module()
    class ToyClassifier(BaseModel):
        def __init__(self, in_dim: int = 8, num_classes: int = 3) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(in_dim, num_classes)

        def forward(self, inputs, labels, mode="tensor"):  # noqa: ANN001, ANN201
            logits = self.fc(inputs)
            if mode == "loss":
                return {"loss": torch.nn.functional.cross_entropy(logits, labels)}
            if mode == "predict":
                return [(logits.argmax(1), labels)]
            return logits

    @DATASETS.register_module()
    class ToyDataset(Dataset):
        def __init__(self, n: int = 64, seed: int = 0) -> None:
            g = torch.Generator().manual_seed(seed)
            self.x = torch.randn(n, 8, generator=g)
            w = torch.randn(8, 3, generator=torch.Generator().manual_seed(42))
            self.y = (self.x @ w).argmax(1)

        def __len__(self) -> int:
            return len(self.x)

        def __getitem__(self, i: int):  # noqa: ANN204
            return {"inputs": self.x[i], "labels": self.y[i]}

    @METRICS.register_module()
    class ToyAccuracy(BaseMetric):
        default_prefix = "accuracy"

        def process(self, data_batch, data_samples) -> None:  # noqa: ANN001
            for pred, label in data_samples:
                self.results.append(((pred == label).sum().item(), len(label)))

        def compute_metrics(self, results) -> dict:  # noqa: ANN001
            right = sum(r for r, _ in results)
            total = sum(n for _, n in results)
            return {"top1": 100.0 * right / total}

    @HOOKS.register_module()
    class CrashOnceHook(Hook):
        """Raises at the iteration named by TOY_CRASH_AT_ITER (a crashed first launch)."""

        def after_train_iter(self, runner, batch_idx, data_batch=None, outputs=None) -> None:  # noqa: ANN001
            at = os.environ.get("TOY_CRASH_AT_ITER")
            if at and runner.iter + 1 == int(at):
                raise RuntimeError(f"toy crash at iteration {at}")


def _launch(cfg_path: Path, resume: bool = False) -> None:
    from mmengine.config import Config
    from mmengine.runner import Runner

    cfg = Config.fromfile(str(cfg_path))
    cfg.resume = resume
    runner = Runner.from_cfg(cfg)
    try:
        runner.train()
    except RuntimeError as exc:
        print(f"{cfg_path.name}: launch stopped: {exc}")
    finally:
        import logging

        for h in list(runner.logger.handlers):  # close the .log so the next launch gets its own
            h.close()
            runner.logger.removeHandler(h)
        logging.getLogger("mmengine").handlers.clear()
    time.sleep(1.2)  # launches are named by the second they start in


def main() -> int:
    _register()
    work = Path(tempfile.mkdtemp(prefix="mmengine-fixtures-"))
    os.chdir(work)
    for name, lr in (("toy_cls_lr0.1", 0.1), ("toy_cls_lr0.05", 0.05)):
        (work / f"{name}.py").write_text(CONFIG.format(lr=lr, name=name))
    (work / "toy_iter.py").write_text(ITER_CONFIG.format(name="toy_iter"))

    os.environ["TOY_CRASH_AT_ITER"] = "23"  # epoch 3 is iterations 17..24
    _launch(work / "toy_cls_lr0.1.py")
    os.environ.pop("TOY_CRASH_AT_ITER")
    # torch >= 2.6 loads weights only by default, and mmengine 0.10's checkpoints pickle its
    # HistoryBuffer (a known incompatibility): this script's own checkpoint is trusted.
    os.environ["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"] = "1"
    _launch(work / "toy_cls_lr0.1.py", resume=True)
    _launch(work / "toy_cls_lr0.05.py")
    _launch(work / "toy_iter.py")

    if OUT.exists():
        shutil.rmtree(OUT)
    shutil.copytree(work / "work_dirs", OUT / "work_dirs",
                    ignore=shutil.ignore_patterns("*.pth"))
    (OUT / "VERSION").write_text(f"mmengine=={version('mmengine')}\ntorch=={version('torch')}\n")
    shutil.rmtree(work)
    total = sum(p.stat().st_size for p in OUT.rglob("*") if p.is_file())
    print("\n".join(str(p.relative_to(OUT)) for p in sorted(OUT.rglob("*"))))
    print(f"{total} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
