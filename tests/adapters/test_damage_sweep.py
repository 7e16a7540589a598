"""The damage sweep's thresholds (issue 33, "Done when"), on damaged copies of one real run per
format built by tests/damage_sweep.py with its fixed seed:

- on a run of at least 100 points (a smaller one, W&B 0.17's 27, loses a whole history row,
  3 points, to a block that touches it), a small local damage (8 flipped bits, a bad number, a zeroed 512-byte block, a half-written
  last line) keeps ≥ 90% of the run's points, ≥ 99% where the folder holds an intact copy (HF
  Trainer's last-checkpoint/); in an Inspect .eval log, whose samples are compressed members
  each lost whole to a bit that lands in it, every sample whose member the damage did not touch;
- 200 inserted bytes or a repeated 4 KiB region in a W&B or TensorBoard log keep ≥ 90%;
- no number changes without a note, and the note reaches `diff`'s JSON (checked for flipped
  bits and a half line);
- no traceback, an error is one line, the input is unchanged.

Time is not asserted here (a read of these small files takes milliseconds, too few for a ratio
on a shared machine): `python tests/damage_sweep.py` prints it, best of several reads.
"""

from __future__ import annotations

import json
import os
import sys
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

import pytest

from rundiff_core.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import damage_sweep as ds  # noqa: E402

NAMES = [s.name for s in ds.fixture_sources()] + ["mlflow-file", "mlflow-sqlite"]
DIFFED = ("flip8", "halfline")  # the note reaching diff's JSON: checked on these (a diff costs ~1 s)
CASES = [(n, d) for n in NAMES for d in ds.DAMAGES]


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("damage-sweep")


try:
    import fcntl
except ImportError:  # no flock (Windows): each worker writes its own stores
    fcntl = None


@contextmanager
def _locked(path: Path, wait: bool = True) -> Iterator[bool]:
    """An exclusive lock on the file `path` among processes (True: held; False: another holds
    it and `wait` is off)."""
    if fcntl is None:
        yield True
        return
    fd = os.open(path, os.O_CREAT | os.O_RDWR)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)  # closing releases the lock


@pytest.fixture(scope="session")
def mlflow_written(tmp_path_factory, request) -> Path:
    """Where the MLflow stores are written once per session: shared by pytest-xdist's workers
    (the sqlite store's migrations take ~7 s; one worker writes it while the other reads the
    other formats)."""
    base = tmp_path_factory.getbasetemp()
    if hasattr(request.config, "workerinput") and fcntl is not None:
        base = base.parent
    shared = base / "damage-sweep-mlflow"
    shared.mkdir(exist_ok=True)
    return shared


@pytest.fixture(scope="module", autouse=True)
def _write_mlflow_early(mlflow_written):
    """The first worker here writes each store at once (one lock per store: the file store,
    written in a moment, is free while the sqlite store is written); another does not wait."""
    for name in ds.MLFLOW_STORES:
        with _locked(mlflow_written / f".{name}.lock", wait=False) as held:
            if held:
                ds.write_mlflow_stores(mlflow_written, (name,))


@pytest.fixture(scope="module")
def sweep_sources(work, mlflow_written):
    fixture = {s.name: s for s in ds.fixture_sources()}

    @cache
    def mlflow(name: str) -> ds.Source | None:
        with _locked(mlflow_written / f".{name}.lock"):  # waits while another worker writes it
            return ds.mlflow_source(mlflow_written, name)

    class Sources(dict):
        """The formats by name; an MLflow store only when a case asks for it."""

        def __missing__(self, name: str) -> ds.Source:
            got = mlflow(name) if name in ds.MLFLOW_STORES else None
            if got is None:
                raise KeyError(name)
            return got

        def __contains__(self, name: object) -> bool:
            return name in fixture or (name in ds.MLFLOW_STORES and mlflow(name) is not None)

        def all(self) -> dict[str, ds.Source]:
            return {**fixture, **{n: s for n in ds.MLFLOW_STORES if (s := mlflow(n)) is not None}}

    return Sources(fixture)


@pytest.fixture(scope="module")
def clean_reads(work, sweep_sources):
    @cache
    def clean(name: str):
        return ds.clean_copy(sweep_sources[name], work, repeat=1)
    return clean


def _untouched_samples(src: ds.Source, damaged: bytes) -> float:
    """The share of an .eval log's samples whose zip member the (in-place) damage left as it was."""
    clean = (src.folder / src.target).read_bytes()
    with zipfile.ZipFile(src.folder / src.target) as z:
        spans = [(i.header_offset, i.header_offset + 30 + len(i.filename.encode()) + len(i.extra)
                  + i.compress_size) for i in z.infolist() if i.filename.startswith("samples/")]
    diff = [i for i, (a, b) in enumerate(zip(clean, damaged, strict=True)) if a != b]
    kept = [s for s in spans if not any(s[0] <= i < s[1] for i in diff)]
    return len(kept) / len(spans)


@pytest.mark.parametrize(("name", "kind"), CASES, ids=[f"{n}-{d}" for n, d in CASES])
def test_damage_costs_only_what_it_touches(name, kind, work, sweep_sources, clean_reads, capsys):
    if name not in sweep_sources:
        pytest.skip(f"{name}: its writer is not installed")
    src = sweep_sources[name]
    if kind not in ds.damages_for(src):
        pytest.skip(f"{kind} applies to text files")
    case = ds.measure(src, kind, work, repeat=1, clean=clean_reads(name))
    if case is None:
        pytest.skip(f"{kind} does not apply to {src.target}")
    assert case.traceback is None, case.traceback
    assert case.input_unchanged
    assert case.error is None or "\n" not in case.error, case.error
    need = ds.floor(src, kind) if case.points_clean >= ds.MIN_POINTS else None
    if src.prefix == "traj:" and kind in ("flip8", "zero512"):
        damaged = (work / name / kind / src.folder.name / src.target).read_bytes()
        need = _untouched_samples(src, damaged)
    if need is not None:
        assert case.kept >= need, (case.points, case.points_clean, case.new_notes, case.error)
    if not case.changed:
        return
    assert case.noted, "a number changed without a note"
    if kind not in DIFFED:
        return
    if case.error is not None:  # nothing read: the command says so in one line
        assert main(["diff", case.clean_address, case.address]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") <= 2 and "Traceback" not in err
        return
    assert main(["diff", case.clean_address, case.address, "--format", "json"]) in (0, 1)
    out = json.loads(capsys.readouterr().out)
    said = json.dumps(out.get("warnings", [])) + json.dumps(out.get("notes", {}))
    assert any(json.dumps(n)[1:-1][:120] in said for n in case.new_notes), (case.new_notes, said[:2000])


def test_every_format_of_the_issue_is_swept(sweep_sources):
    """W&B of two writer versions, TensorBoard, MLflow file and sqlite, Detectron2, YOLO, HF
    Trainer with its intact copy, Inspect .eval, SB3 Monitor."""
    pytest.importorskip("mlflow")
    every = sweep_sources.all()
    assert set(every) == set(NAMES)
    assert sum(n.startswith("wandb-") for n in every) >= 2
    assert any(s.intact_copy for s in every.values())
