"""Console logs of HF Trainer / TRL runs and a second mmengine source, as other people committed
them (tests/fixtures/realworld/textlogs/{cleancodeqwen-trl-sft-dpo,cnminiphi3-deepspeed-hf,
chehhao-sft-qwen-wandb-output}, mmengine/kevin20012-mmseg-deeplabv3; figures from each folder's
expected.json, computed with the standard library).

What they hold that synthetic lines did not: Trainer records only in the middle of a 72 KB log
(after DeepSpeed's launcher output), DeepSpeed's own config dicts printed as Python dicts, tqdm
bars with records glued after them, and a wandb run folder committed without its `.wandb` log
whose `files/output.log` is the only history.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rundiff_core.cli import main
from rundiff_core.resolve import load_runs, open_source
from rundiff_core.testing import hash_tree

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "realworld"
QWEN = REAL / "textlogs" / "cleancodeqwen-trl-sft-dpo"
PHI3 = REAL / "textlogs" / "cnminiphi3-deepspeed-hf"
WANDB = REAL / "textlogs" / "chehhao-sft-qwen-wandb-output"
MMSEG = REAL / "mmengine" / "kevin20012-mmseg-deeplabv3"


def _expected(folder: Path) -> dict:
    return json.loads((folder / "expected.json").read_text())


def _by_id(folder: Path) -> dict:
    src = open_source(f"local:{folder}")
    return {r.run_id: src.load_run(r) for r in src.list_runs()}


def _check_metric(run, key: str, exp: dict) -> None:
    h = run.history([key])
    assert len(h) == exp["points"], key
    assert h.value.iloc[0] == pytest.approx(exp["first_value"])
    assert h.value.iloc[-1] == pytest.approx(exp["last_value"])
    assert (h.value.min(), h.value.max()) == (pytest.approx(exp["min"]), pytest.approx(exp["max"]))


@pytest.mark.parametrize("folder", [QWEN, PHI3], ids=["trl-sft-dpo", "deepspeed-hf"])
def test_trainer_records_are_read_wherever_they_sit(folder):
    exp = _expected(folder)["files"]
    before = hash_tree(str(folder))
    runs = _by_id(folder)
    found = {name for name, f in exp.items() if f["records_by_kind"].get("train", 0) >= 2}
    assert found <= set(runs), (found, sorted(runs))
    for name in found:
        run, want = runs[name], exp[name]
        for key in ("loss", "eval_loss"):
            if key in want["metrics"]:
                _check_metric(run, key, want["metrics"][key])
        h = run.history(["loss"])
        assert h.step.iloc[-1] == pytest.approx(
            max(want["epoch"]["max"] if "final" not in want["records_by_kind"] else 0,
                h.step.max()))  # x is the printed epoch: it rises with the records
        assert h.step.is_monotonic_increasing
    assert hash_tree(str(folder)) == before


def test_records_past_the_first_16_kib_are_found():
    """sft.log's 59 records sit at bytes 32,074–51,287 of 72,462: beyond a head-and-tail sniff."""
    sft = _expected(PHI3)["files"]["sft.log"]
    assert sft["bytes"] > 32 << 10
    runs = _by_id(PHI3)
    assert "sft.log" in runs
    assert len(runs["sft.log"].history(["loss"])) == sft["metrics"]["loss"]["points"] == 49


def test_a_launchers_config_dicts_are_no_metrics():
    """DeepSpeed prints its aio config as a Python dict (`{'block_size': 1048576, …}`); the
    Trainer's records all carry `epoch`, those dicts do not."""
    run = _by_id(PHI3)["ds_pretrain.log"]
    keys = set(run.metric_keys())
    assert {"block_size", "queue_depth", "thread_count", "seed"}.isdisjoint(keys)
    assert {"loss", "grad_norm", "learning_rate"} <= keys
    assert "epoch" not in keys  # the x-axis, not a metric
    assert any("without `epoch` skipped" in n for n in run.fidelity)
    h = run.history(["loss"])
    assert len(h) == 99 and h.step.is_monotonic_increasing and h.step.iloc[-1] <= 1.0


def test_a_killed_run_with_one_record_is_not_claimed_as_a_run():
    """dpo.log printed one Trainer record and three DeepSpeed dicts before it was killed: a
    single record is no training log to compare."""
    assert "dpo.log" not in _by_id(PHI3)


def test_a_wandb_folder_without_its_log_takes_its_history_from_the_console(capsys, monkeypatch):
    from rundiff_adapters.local import textlog

    exp = _expected(WANDB)["files"]
    before = hash_tree(str(WANDB))
    parses: list[str] = []
    real = textlog.read_text_log

    def counted(path, *a, **k):
        parses.append(path)
        return real(path, *a, **k)

    monkeypatch.setattr(textlog, "read_text_log", counted)
    runs = {r.run_id: r for r in load_runs(str(WANDB))}
    assert set(runs) == {"oxtz69dy", "ramuywd8"}
    for run_id, run in runs.items():
        rel = next(k for k in exp if run_id in k)
        want = exp[rel]["metrics"]
        _check_metric(run, "loss", want["loss"])
        if "eval_loss" in want:
            _check_metric(run, "eval_loss", want["eval_loss"])
        assert any("history read from files/output.log" in n for n in run.fidelity)
        assert run.adapter == "wandb"
    for run_id, run in runs.items():  # the summary is still wandb's own, from files/
        rel = next(k for k in exp if run_id in k)
        summary = json.loads((WANDB / rel).parent.joinpath("wandb-summary.json").read_text())
        summary.pop("_wandb", None)
        assert run.summary == summary
    assert len(parses) == len(set(parses)) == 2  # each console log parsed once (run, history)
    assert main(["ls", str(WANDB)]) == 0
    out = capsys.readouterr().out
    assert "history read from files/output.log" in out and "no history" not in out
    assert hash_tree(str(WANDB)) == before


def test_a_wandb_folder_whose_console_is_no_training_log_says_it_has_no_history(tmp_path):
    src = next(p for p in (WANDB / "scripts" / "wandb").iterdir() if p.name.endswith("oxtz69dy"))
    dst = tmp_path / "wandb" / src.name
    (dst / "files").mkdir(parents=True)
    for name in ("config.yaml", "wandb-summary.json"):
        (dst / "files" / name).write_bytes((src / "files" / name).read_bytes())
    (dst / "files" / "output.log").write_text("Downloading shards\nTraceback (most recent call last):\n")
    (run,) = load_runs(str(dst))
    assert run.metric_keys() == []
    assert any("no history" in n and "output.log holds no training log" in n for n in run.fidelity)


def test_second_mmengine_source_iteration_based_segmentation():
    exp = _expected(MMSEG)
    rel = next(k for k in exp["files"] if k.endswith("vis_data/scalars.json"))
    want = exp["files"][rel]
    before = hash_tree(str(MMSEG))
    runs = load_runs(str(MMSEG))
    assert len(runs) == exp["runs"] == 1
    run = runs[0]
    for key in ("loss", "mIoU"):
        m = want["metrics"][key]
        h = run.history([key])
        _check_metric(run, key, m)
        assert (h.step.iloc[0], h.step.iloc[-1]) == (m["first_step"], m["last_step"])
    assert sorted(run.history(["mIoU"]).step.tolist()) == want["val_steps"]
    assert os.path.basename(os.path.dirname(os.path.dirname(os.path.dirname(rel)))) == "train"
    assert hash_tree(str(MMSEG)) == before
