"""Damaged copies of real `.wandb` logs cost only what the damage touched (issue 33).

Sources: a run written here by the installed wandb (offline, its Go core: a summary record after
every history row) and the committed log of wandb 0.16's Python writer
(tests/fixtures/wandb-old-writer). Each is copied, then damaged with a fixed seed — bits flipped,
512 bytes zeroed, 200 bytes inserted, 200 removed, a 4 KiB region repeated, the tail cut — and read
through `load_run` as a user would. Every case: no traceback, at least 90% of the points kept,
no point that was not logged and none twice, the input untouched, and a note that names the
bytes skipped and what the records either side say was lost; "killed" only for a torn end.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from rundiff_adapters.wandb.datastore import read_log
from rundiff_adapters.wandb.reader import DAMAGE_NOTES

from rundiff_core.resolve import load_run
from rundiff_core.testing import hash_tree

OLD_WRITER = Path(__file__).resolve().parents[1] / "fixtures" / "wandb-old-writer"
ROWS = 1500


@pytest.fixture(scope="module")
def current_run(tmp_path_factory) -> str:
    """1,500 rows × 3 keys by the installed wandb, offline."""
    wandb = pytest.importorskip("wandb")
    root = tmp_path_factory.mktemp("wandb-damage")
    run = wandb.init(project="rundiff-damage", dir=str(root), mode="offline", config={"lr": 1e-3, "seed": 3},
                     settings=wandb.Settings(console="off", x_disable_stats=True))
    for i in range(ROWS):
        run.log({"loss": 1.0 / (i + 1), "acc": i / ROWS, "lr": 1e-3 * 0.5 ** (i // 500)})
    run.summary["best"] = 1.0 / ROWS
    run.finish()
    folder = glob.glob(str(root / "wandb" / "offline-run-*"))[0]
    log = glob.glob(os.path.join(folder, "*.wandb"))[0]
    deadline = time.monotonic() + 60
    while read_log(log, history=False, summary=False).exit is None and time.monotonic() < deadline:
        time.sleep(0.2)  # wandb-core may still be writing the tail after finish()
    return folder


def _sources(current_run: str) -> dict[str, str]:
    return {"current": current_run, "old-writer": glob.glob(str(OLD_WRITER / "offline-run-*"))[0]}


def _damage(data: bytes, kind: str, seed: int) -> tuple[bytes, int]:
    """A damaged copy and where the damage is (its first byte)."""
    rng = np.random.default_rng(seed)
    n = len(data)
    at = int(rng.integers(64, n - 8192))
    if kind == "flip8":
        d = bytearray(data)
        spots = sorted(int(x) for x in rng.integers(7, n, 8))
        for off in spots:
            d[off] ^= 1 << int(rng.integers(0, 8))
        return bytes(d), spots[0]
    if kind == "zero512":
        return data[:at] + bytes(512) + data[at + 512:], at
    if kind == "insert200":
        return data[:at] + rng.bytes(200) + data[at:], at
    if kind == "remove200":
        return data[:at] + data[at + 200:], at
    if kind == "repeat4k":
        return data[:at + 4096] + data[at:at + 4096] + data[at + 4096:], at + 4096
    raise AssertionError(kind)


def _copy(folder: str, dst: Path, damaged: bytes | None = None) -> Path:
    out = dst / os.path.basename(folder)
    shutil.copytree(folder, out)
    if damaged is not None:
        log = glob.glob(str(out / "*.wandb"))[0]
        Path(log).write_bytes(damaged)
        os.utime(log, (time.time() - 86400, time.time() - 86400))  # not a live run
    return out


def _points(run) -> Counter:
    h = run.history()
    return Counter(zip(h["step"].tolist(), h["key"].astype(str).tolist(), h["value"].tolist(), strict=True))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("kind", ["flip8", "zero512", "insert200", "remove200", "repeat4k"])
@pytest.mark.parametrize("source", ["current", "old-writer"])
def test_damaged_log_keeps_what_the_damage_did_not_touch(current_run, tmp_path, source, kind, seed):
    folder = _sources(current_run)[source]
    clean_run = load_run(str(_copy(folder, tmp_path / "clean")))
    clean = _points(clean_run)
    data = Path(glob.glob(os.path.join(folder, "*.wandb"))[0]).read_bytes()
    damaged, _at = _damage(data, kind, seed)
    copy = _copy(folder, tmp_path / "damaged", damaged)
    before = hash_tree(copy)
    run = load_run(str(copy))
    got = _points(run)
    summary = run.summary  # folded lazily from the offsets the damaged read found
    assert summary == clean_run.summary or kind in ("flip8", "zero512"), (summary, clean_run.summary)
    assert hash_tree(copy) == before  # read-only
    assert not got - clean  # nothing that was not logged, nothing twice
    assert sum(got.values()) >= 0.9 * sum(clean.values()), (kind, seed)
    notes = " | ".join(run.fidelity)
    stretches = re.findall(r"bytes ([\d,]+)–([\d,]+)(?: and [\d,–]+)* unreadable \(([\d,]+) byte", notes)
    assert stretches, notes
    log = read_log(glob.glob(str(copy / "*.wandb"))[0])
    assert sum(d.size for d in log.stats.damage) == log.stats.corrupt_bytes > 0
    told = run.meta["log_damage"][os.path.basename(glob.glob(str(copy / "*.wandb"))[0])]
    assert [t["bytes"] for t in told] == [[list(r) for r in d.ranges] for d in log.stats.damage]
    for d in log.stats.damage[:DAMAGE_NOTES]:  # the rest in one sum
        assert f"bytes {d.ranges[0][0]:,}–{d.ranges[0][1]:,}" in notes
        if d.lost:
            assert f"{d.lost:,} record(s) skipped" in notes
    if len(log.stats.damage) > DAMAGE_NOTES:
        assert f"{len(log.stats.damage) - DAMAGE_NOTES} more damaged stretch(es)" in notes
    if kind in ("insert200", "repeat4k", "remove200"):
        assert "killed" not in notes and run.status == "finished"  # the exit record is read past the damage
    if kind == "repeat4k":
        assert "no record lost" in notes and "repeat records just before it" in notes
        assert got == clean
    if kind == "insert200" and source == "current":
        assert "200 byte(s) later than the block grid before it (bytes inserted" in notes


@pytest.mark.parametrize("source", ["current", "old-writer"])
def test_damage_reads_as_fast_path_beyond_the_damaged_blocks(current_run, tmp_path, source, monkeypatch):
    """The careful walk covers the damaged blocks only: a flipped bit sends it one block, not the log."""
    from rundiff_adapters.wandb import framing

    folder = _sources(current_run)[source]
    data = bytearray(Path(glob.glob(os.path.join(folder, "*.wandb"))[0]).read_bytes())
    data[len(data) // 2] ^= 0x08
    path = tmp_path / "flipped.wandb"
    path.write_bytes(bytes(data))
    walked: list[int] = []
    real = framing._careful

    def spy(data, arr, n, pos, phase, out, **kw):
        got = real(data, arr, n, pos, phase, out, **kw)
        walked.append((got[0] if got else n) - pos)
        return got

    monkeypatch.setattr(framing, "_careful", spy)
    log = read_log(str(path))
    assert len(log.stats.damage) == 1 and walked and sum(walked) <= 2 * framing.BLOCK


def test_a_torn_end_says_killed_and_mid_file_damage_does_not(current_run, tmp_path):
    folder = current_run
    data = Path(glob.glob(os.path.join(folder, "*.wandb"))[0]).read_bytes()
    torn = _copy(folder, tmp_path / "torn", data[: len(data) * 2 // 3])  # cut mid-run, old
    run = load_run(str(torn))
    notes = " | ".join(run.fidelity)
    assert run.status == "unknown" and "torn end of log" in notes
    assert "no exit record: the log ends in a torn record at step" in notes and "killed" in notes

    # damage that takes the exit record: the run's end cannot be told, and no one is blamed
    hit = bytearray(data)
    hit[_exit_record(data) - 1] ^= 0x10  # a bit of its type tag: the chunk CRC fails
    lost = _copy(folder, tmp_path / "lost", bytes(hit))
    run = load_run(str(lost))
    notes = " | ".join(run.fidelity)
    assert read_log(glob.glob(str(lost / "*.wandb"))[0]).exit is None
    assert run.status == "unknown" and "killed" not in notes and "torn" not in notes
    assert "whether the run finished cannot be told" in notes


def _exit_record(data: bytes) -> int:
    """The file offset of the exit record's payload (Record.exit: field 18, after `num`)."""
    from rundiff_adapters.wandb import framing

    f = framing.frame(bytearray(data) + bytearray(1 << 17), len(data))
    for s, e in zip(f.starts.tolist(), f.ends.tolist(), strict=True):
        if e > len(data):
            continue
        p = s
        while p < e:  # num, then the passive fields (control, uuid, _info), then the record's type
            tag, p = _varint(data, p)
            if tag == 18 << 3 | 2:
                return p
            if tag & 7 == 0:
                _, p = _varint(data, p)
            elif tag & 7 == 2 and tag >> 3 in (16, 19, 200):
                size, p = _varint(data, p)
                p += size
            else:
                break
    raise AssertionError("no exit record")


def _varint(data: bytes, p: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        b = data[p]
        value |= (b & 0x7F) << shift
        p, shift = p + 1, shift + 7
        if not b & 0x80:
            return value, p


def test_a_damaged_header_is_read_and_said(tmp_path):
    folder = glob.glob(str(OLD_WRITER / "offline-run-*"))[0]
    clean = _points(load_run(str(_copy(folder, tmp_path / "clean"))))
    data = bytearray(Path(glob.glob(os.path.join(folder, "*.wandb"))[0]).read_bytes())
    data[2] ^= 0x01  # ':W&B' → ':W\x27B'
    copy = _copy(folder, tmp_path / "damaged", bytes(data))
    run = load_run(str(copy))
    assert _points(run) == clean
    assert any("the W&B header, damaged" in n for n in run.fidelity)
    log = glob.glob(str(copy / "*.wandb"))[0]
    assert load_run(log).run_id == run.run_id  # a bare file with that header is still claimed
