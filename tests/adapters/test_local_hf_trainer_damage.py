"""A damaged `trainer_state.json` costs only what the damage touched (issue 33).

Sources: the real Trainer output folders of tests/fixtures/realworld/hf-output (whisper-ja: the
root state and a `last-checkpoint/` copy of the same step; sygoat: the root state at step 8660
and `checkpoint-8500/`), and the run written by `transformers.Trainer` itself in
tests/fixtures/hf_trainer (snapshots only: `checkpoint-4/8/12`). Each is copied and its newest
state damaged with a fixed seed — bits flipped, 512 bytes zeroed, 200 bytes inserted, a 4 KiB
region repeated, the file cut mid-line (a half-written state), a number made bad. Then:

- an intact copy beside it is read instead, with the damaged file's readable entries after the
  copy's last step: ≥ 99% of the points (all of them when the copy holds every entry);
- with no intact copy, the damaged file's readable entries — before the damage and whole ones
  after it — are read: ≥ 90% of the points for local damage, every entry before a cut;
- never a traceback, never a point that was not logged or one twice, the input untouched, and a
  note that names the damaged file, where, and what was read instead; `diff` never says "no
  metrics logged".
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from rundiff_core.cli import main
from rundiff_core.resolve import load_runs
from rundiff_core.testing import hash_tree

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
WHISPER = FIXTURES / "realworld" / "hf-output" / "whisper-ja-last-checkpoint"
SYGOAT = FIXTURES / "realworld" / "hf-output" / "sygoat-mistral-lora-llamafactory"
TRAINER = FIXTURES / "hf_trainer" / "run"
KINDS = ["flip8", "zero512", "insert200", "repeat4k", "half", "bad-number"]


def _damage(data: bytes, kind: str, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    n = len(data)
    lo = data.index(b'"log_history"') + 20  # inside the history: what the damage is about
    at = int(rng.integers(lo, max(lo + 1, n - 4200)))
    if kind == "flip8":
        d = bytearray(data)
        for off in rng.integers(lo, n - 2, 8).tolist():
            d[off] ^= 1 << int(rng.integers(0, 8))
        return bytes(d)
    if kind == "zero512":
        return data[:at] + bytes(512) + data[at + 512:]
    if kind == "insert200":
        return data[:at] + rng.bytes(200) + data[at:]
    if kind == "repeat4k":
        size = min(4096, n - at)
        return data[:at + size] + data[at:at + size] + data[at + size:]
    if kind == "half":  # cut mid-line, as a state file being written looks
        cut = data.rindex(b"\n", 0, at) + 9
        return data[:cut]
    if kind == "bad-number":
        i = data.index(b'"loss": ', at) + 8
        return data[:i] + b"0.5.1" + data[data.index(b",", i):]
    raise AssertionError(kind)


def _points(run) -> Counter:
    out: Counter = Counter()
    for key in run.metric_keys():
        steps, values, _ = run.series(key)
        out.update((key, s, v) for s, v in zip(steps.tolist(), values.tolist(), strict=True))
    return out


def _read(folder: Path):
    before = hash_tree(folder)
    runs = load_runs(str(folder))
    assert len(runs) == 1
    assert hash_tree(folder) == before  # read-only
    return runs[0], _points(runs[0])


def _damaged_copy(src: Path, tmp: Path, rel: str, kind: str, seed: int) -> Path:
    folder = tmp / src.name
    shutil.copytree(src, folder)
    path = folder / rel
    path.write_bytes(_damage(path.read_bytes(), kind, seed))
    return folder


def _clean(src: Path, tmp: Path):
    folder = tmp / "clean" / src.name
    shutil.copytree(src, folder)
    return _read(folder)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("kind", KINDS)
def test_an_intact_copy_is_read_instead(tmp_path, kind, seed):
    """whisper-ja: last-checkpoint/ holds the same step as the damaged root state."""
    _, clean = _clean(WHISPER, tmp_path)
    folder = _damaged_copy(WHISPER, tmp_path, "trainer_state.json", kind, seed)
    run, got = _read(folder)
    assert not got - clean  # nothing that was not logged, nothing twice
    assert sum(got.values()) >= 0.99 * sum(clean.values())
    notes = " | ".join(run.fidelity)
    if "not valid JSON" not in notes:  # a repeat of whole entries is valid JSON: read once
        assert kind == "repeat4k" and got == clean and "equal to an earlier one dropped" in notes
        return
    assert "trainer_state.json: not valid JSON (" in notes and "byte " in notes
    assert "read last-checkpoint/trainer_state.json, the newest intact copy" in notes
    assert "damaged file: " in notes


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("kind", ["flip8", "zero512", "insert200", "repeat4k", "bad-number"])
def test_entries_newer_than_the_copy_come_from_the_damaged_file(tmp_path, kind, seed):
    """sygoat: checkpoint-8500/ is intact but older; the damaged root state's readable entries
    after step 8500 are read from it."""
    _, clean = _clean(SYGOAT, tmp_path)
    folder = _damaged_copy(SYGOAT, tmp_path, "trainer_state.json", kind, seed)
    run, got = _read(folder)
    assert not got - clean
    assert sum(got.values()) >= 0.99 * sum(clean.values())
    notes = " | ".join(run.fidelity)
    assert "read checkpoint-8500/trainer_state.json, the newest intact copy (850 log_history entries)" in notes
    late = {p for p in clean if p[1] > 8500}
    if not late - set(got):  # the damage spared the entries after the copy: all of them read
        assert "the copy lacks (steps 8510–8660)" in notes


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("kind", KINDS)
def test_with_no_intact_copy_the_readable_part_is_read(tmp_path, kind, seed):
    """The root state alone (its snapshots not copied): every whole entry is read."""
    clean_dir = tmp_path / "clean" / "out"
    clean_dir.mkdir(parents=True)
    shutil.copy(SYGOAT / "trainer_state.json", clean_dir)
    _, clean = _read(clean_dir)
    folder = tmp_path / "out"
    folder.mkdir()
    data = (SYGOAT / "trainer_state.json").read_bytes()
    (folder / "trainer_state.json").write_bytes(_damage(data, kind, seed))
    run, got = _read(folder)
    notes = " | ".join(run.fidelity)
    if kind == "flip8":  # a flip that keeps the JSON valid changes a key or value: one point each
        assert sum((got - clean).values()) <= 8
        if "not valid JSON" not in notes:
            return  # every flip kept the JSON valid: nothing to tell it by
    else:
        assert not got - clean
    assert "trainer_state.json: not valid JSON (" in notes and "no intact copy beside it" in notes
    if kind == "half":  # every entry before the cut
        last = max(s for _k, s, _v in got)
        assert got == Counter({p: c for p, c in clean.items() if p[1] <= last})
        assert "to the end no whole entry (the file is cut there" in notes
    else:
        assert sum(got.values()) >= 0.9 * sum(clean.values())
        assert "unreadable: the entries between step" in notes or "to the end no whole entry" in notes
    if kind == "repeat4k":
        assert "equal to an earlier one (a repeated region) dropped" in notes or got == clean


@pytest.mark.parametrize("kind", KINDS)
def test_a_trainer_run_of_snapshots_only(tmp_path, kind):
    """The real Trainer's run: checkpoint-12 damaged, checkpoint-8 intact."""
    _, clean = _clean(TRAINER, tmp_path)
    folder = _damaged_copy(TRAINER, tmp_path, "checkpoint-12/trainer_state.json", kind, 5)
    run, got = _read(folder)
    # a flip that keeps the JSON valid changes a key or value of the entries after the copy
    assert sum((got - clean).values()) <= (8 if kind == "flip8" else 0)
    up_to_8 = Counter({p: c for p, c in clean.items() if p[1] <= 8})
    assert not up_to_8 - got  # the intact copy's every point
    notes = " | ".join(run.fidelity)
    assert "checkpoint-12/trainer_state.json: not valid JSON" in notes
    assert "read checkpoint-8/trainer_state.json, the newest intact copy" in notes


def test_diff_of_a_damaged_run_compares_its_readable_points(tmp_path, capsys):
    folder = tmp_path / "out"
    folder.mkdir()
    data = (SYGOAT / "trainer_state.json").read_bytes()
    (folder / "trainer_state.json").write_bytes(_damage(data, "zero512", 0))
    code = main(["diff", str(folder), str(SYGOAT), "--metric", "loss", "--goal", "min",
                 "--format", "json"])
    out = capsys.readouterr().out
    assert code == 0 and "no metrics logged" not in out
    json.loads(out)


def test_every_snapshot_damaged_reads_the_newest_readable_part(tmp_path):
    folder = tmp_path / WHISPER.name
    shutil.copytree(WHISPER, folder)
    for rel in ("trainer_state.json", "last-checkpoint/trainer_state.json"):
        path = folder / rel
        path.write_bytes(_damage(path.read_bytes(), "zero512", 1))
    run, got = _read(folder)
    assert got
    notes = " | ".join(run.fidelity)
    assert "no intact copy beside it (last-checkpoint/trainer_state.json damaged too)" in notes
