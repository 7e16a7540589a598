"""Damaged copies of real TensorBoard event files cost only what the damage touched (issue 33).

Sources: files written here by tensorboardX's and torch's SummaryWriter (scalars, a histogram and
a text summary among them), the committed TF2 writer's file (tensor-encoded scalars,
tests/fixtures/tf2-writer) and event files found in the wild (tests/fixtures/realworld: YOLOv5,
Ultralytics with its 270 KB graph record, RLlib, CatBoost, tensorboard-reducer's test runs). Each
is copied alone into a run folder, then damaged with a fixed seed — 8 bits flipped, 512 bytes
zeroed, 200 random bytes inserted, 200 removed, a 4 KiB region repeated, the tail cut mid-record —
and read through `load_run` as a user would. Every case: no traceback, at least 90% of the points
kept, no point that was not logged and none twice, the input untouched, every damaged stretch
named by its bytes in a note and in `meta["log_damage"]`; where the framing can count what a
stretch cost, the count is exactly the points that went missing.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("crc32c")

from rundiff_adapters.tensorboard.events import read_event_file  # noqa: E402
from rundiff_adapters.tensorboard.reader import DAMAGE_NOTES  # noqa: E402

from rundiff_core.resolve import load_run  # noqa: E402
from rundiff_core.testing import hash_tree  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REALWORLD = {
    "tf2-writer": "tf2-writer/run/events.out.tfevents.1796174707.vm.3114.0.v2",
    "yolov5": "realworld/yolov5-old/zhouyingchaoai-yolov5-2020-exp1-exp2/runs/exp1/"
              "events.out.tfevents.1595235870.0d010d552277.467.0",
    "ultralytics": "realworld/ultralytics/angjustinl-gcxl2025-yolo11/yolo_train/runs/detect/train4/"
                   "events.out.tfevents.1732621140.ANGLaptop.46712.0",
    "rllib": "realworld/raytune/rllib-accelerating-ray1/ray_results/volta1/"
             "model1_ppo_both_gpus_all_driver_it_1_7/events.out.tfevents.1617571683.volta1",
    "catboost": "realworld/trees/it3385-mlops-assignment/notebooks/catboost_info/learn/events.out.tfevents",
    "tb-reducer": "realworld/trees/tensorboard-reducer/tests/runs/lax/run_3/"
                  "events.out.tfevents.1622543341.janoshs-mbp.lan.86862.5",
}
WRITTEN = ("tensorboardX", "torch")
KINDS = ("flip8", "zero512", "insert200", "remove200", "repeat4k", "cut")
STEPS = 1500


def _write(kind: str, folder: Path) -> Path:
    """3 scalar tags × STEPS steps, a histogram every 100 steps and one text summary."""
    if kind == "torch":
        pytest.importorskip("torch")
        from torch.utils.tensorboard import SummaryWriter
    else:
        pytest.importorskip("tensorboardX")
        from tensorboardX import SummaryWriter
    w = SummaryWriter(str(folder))
    rng = np.random.default_rng(3)
    w.add_text("notes", "damage test run", 0)
    for step in range(STEPS):
        w.add_scalar("train/loss", 1.0 / (step + 1), step)
        w.add_scalar("train/lr", 1e-3 * 0.5 ** (step // 500), step)
        w.add_scalar("eval/acc", step / STEPS, step)
        if step % 100 == 0:
            w.add_histogram("weights", rng.normal(size=500), step)
    w.close()
    (path,) = folder.glob("events.out.tfevents.*")
    return path


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[str, Path]:
    out = {name: FIXTURES / rel for name, rel in REALWORLD.items()}
    for kind in WRITTEN:
        try:
            out[kind] = _write(kind, tmp_path_factory.mktemp(kind))
        except pytest.skip.Exception:
            pass
    return out


def _damage(data: bytes, kind: str, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    n = len(data)
    at = int(rng.integers(n // 8, n - 4096 - 64))
    if kind == "flip8":
        d = bytearray(data)
        for off in rng.integers(0, n, 8).tolist():
            d[off] ^= 1 << int(rng.integers(0, 8))
        return bytes(d)
    if kind == "zero512":
        return data[:at] + bytes(512) + data[at + 512:]
    if kind == "insert200":
        return data[:at] + rng.bytes(200) + data[at:]
    if kind == "remove200":
        return data[:at] + data[at + 200:]
    if kind == "repeat4k":
        return data[:at + 4096] + data[at:at + 4096] + data[at + 4096:]
    if kind == "cut":
        return data[: n - int(rng.integers(1, min(1000, n // 20)))]
    raise AssertionError(kind)


def _run_folder(src: Path, dst: Path, data: bytes | None = None) -> Path:
    dst.mkdir(parents=True)
    target = dst / src.name
    if data is None:
        shutil.copyfile(src, target)
    else:
        target.write_bytes(data)
    return target


def _points(run) -> Counter:
    h = run.history()
    values = [repr(v) for v in h["value"].tolist()]  # NaN is logged too, and nan != nan
    return Counter(zip(h["step"].tolist(), h["key"].astype(str).tolist(), values,
                       h["wall_time"].tolist(), strict=True))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("source", [*REALWORLD, *WRITTEN])
def test_damaged_file_keeps_what_the_damage_did_not_touch(sources, tmp_path, source, kind, seed):
    if source not in sources:
        pytest.skip(f"{source} is not installed")
    src = sources[source]
    clean_file = _run_folder(src, tmp_path / "clean" / "run")
    clean = _points(load_run(f"tb:{clean_file.parent}"))
    assert sum(clean.values()) >= 100
    damaged = _damage(src.read_bytes(), kind, seed)
    path = _run_folder(src, tmp_path / "damaged" / "run", damaged)
    before = hash_tree(path.parent)
    run = load_run(f"tb:{path.parent}")
    got = _points(run)
    assert hash_tree(path.parent) == before  # read-only
    assert not got - clean  # nothing that was not logged, nothing twice
    assert sum(got.values()) >= 0.9 * sum(clean.values()), (kind, seed)

    fr = read_event_file(str(path)).framing
    notes = " | ".join(run.fidelity)
    if kind == "repeat4k":
        assert fr.repeated or any(d.seam >= 0 for d in fr.damage) or fr.damage[0].bad_data, notes
        assert got == clean  # the region is read once; a record its seam cut is read in the copy
    if kind == "cut":
        assert not fr.damage and (fr.truncated_tail or len(damaged) == fr.starts[-1] + fr.lengths[-1] + 4)
        if fr.truncated_tail:
            assert f"truncated record at the end skipped ({fr.truncated_tail} bytes" in notes
        return
    if damaged == src.read_bytes():  # flipped bits that cancel out
        return
    if kind == "remove200" and not fr.damage:  # whole records removed: nothing is damaged
        assert fr.fast and len(damaged) == fr.starts[-1] + fr.lengths[-1] + 4
        return
    assert fr.damage, notes
    # every stretch is named by its bytes, in the notes and in meta
    assert run.meta["log_damage"][path.name] == [d.as_meta() for d in fr.damage]
    for d in fr.damage[:DAMAGE_NOTES]:
        assert f"{path.name}: bytes {d.start:,}–{d.end:,} unreadable ({d.size:,} byte(s)" in notes
        if d.skipped and d.seam < 0:
            assert f"{d.skipped:,} record(s) skipped" in notes
        if d.repeated:
            assert f"the {d.repeated:,} record(s) after them repeat, byte for byte" in notes
        if d.unframed and d.seam < 0:
            assert f"{d.unframed:,} byte(s) in which no record can be framed" in notes
        if d.lost == 0:
            assert "no record lost" in notes
        if d.overrun and d.seam < 0:
            assert f"claims {d.overrun:,} byte(s) past the next good record's start" in notes
    if len(fr.damage) > DAMAGE_NOTES:
        assert f"{len(fr.damage) - DAMAGE_NOTES} more damaged stretch(es)" in notes
    assert f"{len(read_event_file(str(path)).step):,} good record(s) kept" in notes


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("kind", [k for k in KINDS if k != "cut"])
@pytest.mark.parametrize("source", WRITTEN)
def test_what_a_stretch_is_said_to_cost_is_what_went_missing(sources, tmp_path, source, kind, seed):
    """In a file of one point per record, the records a note says were lost are exactly the
    points missing; where it cannot count (bytes framing nothing), at least those it counted are
    missing. A repeated region costs nothing, and an insertion at most the record it fell in."""
    if source not in sources:
        pytest.skip(f"{source} is not installed")
    src = sources[source]
    clean = sum(_points(load_run(f"tb:{_run_folder(src, tmp_path / 'clean' / 'run').parent}")).values())
    damaged = _damage(src.read_bytes(), kind, seed)
    path = _run_folder(src, tmp_path / "damaged" / "run", damaged)
    got = sum(_points(load_run(f"tb:{path.parent}")).values())
    fr = read_event_file(str(path)).framing
    clean_fr = read_event_file(str(src)).framing
    sizes = dict(zip((clean_fr.starts - 12).tolist(), clean_fr.lengths.tolist(), strict=True))
    # the histogram and text records hold no point: a stretch that took one of them may count a
    # record lost that no point is missing for
    other = sum(1 for n in sizes.values() if n > 200)
    missing = clean - got
    lost = [d.lost for d in fr.damage]
    if None not in lost:
        assert missing <= sum(lost) <= missing + other, (lost, missing)
    else:
        assert missing >= sum(d.skipped for d in fr.damage) - other
    if kind == "repeat4k":
        assert missing == 0
    if kind == "insert200":
        assert missing <= 1


def test_a_damaged_run_is_listed_with_its_notes(sources, tmp_path, capsys):
    """`rundiff ls` shows the damage notes of a damaged file (no traceback)."""
    from rundiff_core.testing import run_cli

    src = sources["yolov5"]
    path = _run_folder(src, tmp_path / "runs" / "exp1", _damage(src.read_bytes(), "insert200", 0))
    assert run_cli(["ls", f"tb:{path.parent}"]) == 0
    out = capsys.readouterr().out
    assert "unreadable" in out and "Traceback" not in out


@pytest.mark.parametrize("source", [*REALWORLD, *WRITTEN])
def test_the_fast_path_reads_clean_files_and_damage_costs_a_step_per_stretch(sources, source, monkeypatch):
    """A clean file never leaves the one-chain fast path; a damaged one is walked a segment at a
    time — Python steps in proportion to the damaged stretches, not to the records."""
    if source not in sources:
        pytest.skip(f"{source} is not installed")
    from rundiff_adapters.tensorboard import tfrecord

    data = sources[source].read_bytes()
    assert tfrecord.frame_records(data).fast
    steps = []
    real = tfrecord._Walk._at
    monkeypatch.setattr(tfrecord._Walk, "_at", lambda self, pos: steps.append(pos) or real(self, pos))
    for kind in ("flip8", "insert200", "repeat4k"):
        steps.clear()
        fr = tfrecord.frame_records(_damage(data, kind, 0))
        assert not fr.fast and len(fr.damage) <= 8
        assert len(steps) <= 12 * max(1, len(fr.damage)), (kind, len(steps), len(fr.damage))


def test_a_search_that_spends_its_budget_says_so(tmp_path, monkeypatch):
    """Headers that check but that no chain reaches, hashed one by one until the budget is spent:
    the note says the search gave up and how much of the file was not read."""
    import struct

    from rundiff_adapters.tensorboard import tfrecord

    def record(payload: bytes) -> bytes:
        head = struct.pack("<Q", len(payload))
        return (head + struct.pack("<I", tfrecord.masked_crc(head)) + payload
                + struct.pack("<I", tfrecord.masked_crc(payload)))

    fake = struct.pack("<Q", 100)
    fake = fake + struct.pack("<I", tfrecord.masked_crc(fake)) + b"\x07" * 50
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    data = record(b"good") + b"\xff" * 3 + fake * 40 + record(b"late")
    (run_dir / "events.out.tfevents.1.host").write_bytes(data)
    monkeypatch.setattr(tfrecord, "RESYNC_BUDGET", 500)
    run = load_run(f"tb:{run_dir}")
    notes = " | ".join(run.fidelity)
    assert (f"bytes 20–{len(data):,} unreadable ({len(data) - 20:,} byte(s)" in notes
            and "gave up (its budget spent): the last" in notes), notes
    (told,) = run.meta["log_damage"]["events.out.tfevents.1.host"]
    assert told["gave_up"] and told["records_lost"] is None
