"""The damage sweep (issue 33): what a small damage costs, measured on one real run per format.

Each source is a real run under tests/fixtures (W&B logs of two writer versions, TensorBoard, a
Detectron2 metrics.json, a YOLO results.csv, an HF Trainer output with its last-checkpoint copy,
an Inspect .eval log, an SB3 Monitor run) or, where no real store is committed, a run written
here by the installed MLflow client (a file store and a sqlite store: fixed run ids and times).
One file of each is copied and damaged with a fixed seed, the damages of the issue:

- `cut`: truncated at a point in its second half;
- `flip8`: 8 bits flipped;
- `zero512`: a 512-byte block (on a 512-byte boundary) zeroed;
- `insert200`: 200 random bytes inserted;
- `dup4k`: a 4 KiB region repeated right after itself (half the file when it is smaller);
- `badnum` (text files): one number given a stray character (`0.25` → `0.2x5`);
- `halfline` (text files): the last line half-written (cut in its middle, no newline).

Each copy is read in this process with rundiff's API as a user's command reads it (every run of
the address, its history and summary) beside the undamaged copy, the two timed in turns (best of
`repeat` reads of each: both meet the same load of a shared machine). Per case: points kept of
the undamaged read, whether any number changed (a key's count or last value, a sample's outcome)
and whether a note the undamaged read does not have says so, the read time against the
undamaged one, no traceback, the input unchanged.

Run as a script (`python tests/damage_sweep.py [--markdown] [--repeat R] [--only SRC,...]`) it
prints the table docs/testing.md holds; `tests/adapters/test_damage_sweep.py` holds the issue's
thresholds to it.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import re
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
REAL = FIXTURES / "realworld"
SEED = 33

DAMAGES = ("cut", "flip8", "zero512", "insert200", "dup4k", "badnum", "halfline")
SMALL = ("flip8", "zero512", "badnum", "halfline")  # small local damage: ≥ 90% kept (≥ 99% with a copy)
SHIFTED = ("insert200", "dup4k")  # intact bytes shifted: ≥ 90% kept in W&B and TensorBoard logs
TEXT_ONLY = ("badnum", "halfline")
MIN_POINTS = 100  # the share floors hold on runs this big: below it one lost row is > 10%


@dataclass(frozen=True)
class Source:
    """One real run: the folder copied, the file in it damaged, how it is addressed."""

    name: str
    folder: Path
    target: str  # the damaged file, relative to `folder`
    prefix: str = ""  # address prefix (`traj:` for a trajectory log)
    text: bool = False  # line-oriented: a bad number and a half line apply
    intact_copy: bool = False  # the folder holds an intact copy of the damaged file
    shifted_rule: bool = False  # W&B / TensorBoard: inserted or repeated bytes keep ≥ 90%

    def address(self, root: Path) -> str:
        path = root / self.target if self.prefix == "traj:" else root
        return f"{self.prefix}{path}"


@dataclass
class Read:
    """What one read of a copy gave: per run and key (count, last value), the notes, the time."""

    numbers: dict[tuple[str, str], tuple[int, float | None]] = field(default_factory=dict)
    notes: set[str] = field(default_factory=set)
    seconds: float = math.inf
    error: str | None = None  # a one-line error (rundiff's InputError, AddressError…): nothing read
    traceback: str | None = None

    @property
    def points(self) -> int:
        return sum(n for n, _ in self.numbers.values())


@dataclass
class Case:
    source: str
    damage: str
    points_clean: int
    points: int
    changed: bool  # a key's count or last value differs from the undamaged read
    new_notes: list[str]
    seconds_clean: float
    seconds: float
    error: str | None
    traceback: str | None
    input_unchanged: bool
    address: str = ""
    clean_address: str = ""

    @property
    def kept(self) -> float:
        return self.points / self.points_clean if self.points_clean else 1.0

    @property
    def noted(self) -> bool:
        return bool(self.new_notes) or self.error is not None

    @property
    def ratio(self) -> float:
        return self.seconds / self.seconds_clean if self.seconds_clean else math.nan


# -- sources ----------------------------------------------------------------------------------------


def _first(pattern: str) -> Path:
    found = sorted(REAL.glob(pattern)) or sorted(FIXTURES.glob(pattern))
    if not found:
        raise FileNotFoundError(pattern)
    return found[0]


def _wandb(folder: Path, name: str) -> Source:
    (log,) = folder.glob("*.wandb")
    return Source(name, folder, log.name, shifted_rule=True)


def fixture_sources() -> list[Source]:
    """The committed real runs, one per format."""
    tb = FIXTURES / "tf2-writer" / "run"
    biggest_tb = max(tb.glob("events.out.tfevents.*"), key=lambda p: p.stat().st_size)
    inspect = _first("inspect/ukgov-inspect-ai-popularity/tests/scorer/logs/*.eval")
    return [
        _wandb(_first("wandb-old-writer/offline-run-*"), "wandb-0.16"),
        _wandb(_first("trees/torch-harmonics/examples/wandb/run-20241201_173250-vfe7zrm4"), "wandb-0.17"),
        Source("tensorboard", tb, biggest_tb.name, shifted_rule=True),
        Source("detectron2", REAL / "detectron2" / "smn-maskrcnn" / "output", "metrics.json", text=True),
        Source("yolo", REAL / "ultralytics" / "aarya01patil-ppe-yolov8" / "runs" / "detect" / "train",
               "results.csv", text=True),
        Source("hf-trainer", REAL / "hf-output" / "whisper-ja-last-checkpoint", "trainer_state.json",
               text=True, intact_copy=True),
        Source("inspect-eval", inspect.parent, inspect.name, prefix="traj:"),
        Source("sb3-monitor", REAL / "sb3" / "monifarsang-ppo-clipping" / "logs" / "ppo" / "CartPole-v1_1",
               "3.monitor.csv", text=True),
    ]


MLFLOW_T0 = 1_700_000_000_000


def write_mlflow(folder: Path, kind: str) -> Path:
    """One run (loss, acc, lr over 400 steps; params) by the installed MLflow client into a file
    store (`folder/mlruns`) or a sqlite store (`folder/mlflow.db`); run ids from a seed, times fixed."""
    import uuid

    from mlflow import MlflowClient
    from mlflow.entities import Metric, Param

    os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 keeps the file store behind it
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ("mlruns" if kind == "file" else "mlflow.db")
    uri = f"file://{path}" if kind == "file" else f"sqlite:///{path}"
    rng = random.Random(2033)
    real_uuid4 = uuid.uuid4
    uuid.uuid4 = lambda: uuid.UUID(int=rng.getrandbits(128), version=4)  # type: ignore[assignment]
    try:
        client = MlflowClient(tracking_uri=uri)
        exp = client.create_experiment("damage-sweep")
        run = client.create_run(exp, start_time=MLFLOW_T0, run_name="sweep")
        client.log_batch(run.info.run_id, params=[Param("lr", "0.001"), Param("seed", "3")])
        metrics = []
        for s in range(400):
            ts = MLFLOW_T0 + 10 * s
            metrics += [Metric("loss", 2.0 * math.exp(-s / 100) + (s % 7) * 1e-3, ts, s),
                        Metric("lr", 1e-3 * 0.5 ** (s // 100), ts, s)]
            if s % 10 == 0:
                metrics.append(Metric("acc", 0.5 + s / 1000, ts + 1, s))
        for i in range(0, len(metrics), 900):
            client.log_batch(run.info.run_id, metrics=metrics[i:i + 900])
        client.set_terminated(run.info.run_id, "FINISHED", end_time=MLFLOW_T0 + 10_000)
    finally:
        uuid.uuid4 = real_uuid4  # type: ignore[assignment]
    return path


MLFLOW_STORES = {"mlflow-file": "file", "mlflow-sqlite": "sqlite"}


def write_mlflow_stores(written: Path, names: tuple[str, ...] = tuple(MLFLOW_STORES)) -> bool:
    """The MLflow stores `names` in `written` (`mlflow-file/`, `mlflow-sqlite/`), unless already
    there; False when MLflow is not installed. Written beside and renamed into place, so a folder
    that exists is whole (the sqlite store's migrations take seconds: the test writes it once)."""
    if all((written / name).is_dir() for name in names):
        return True  # (importing MLflow alone takes a second)
    try:
        import mlflow  # noqa: F401
    except ImportError:
        return False
    for name in names:
        final = written / name
        if final.is_dir():
            continue
        part = written / f".{name}.partial"
        if part.exists():
            shutil.rmtree(part)
        write_mlflow(part, MLFLOW_STORES[name])
        part.rename(final)
    return True


def mlflow_source(written: Path, name: str) -> Source | None:
    """One MLflow store of `write_mlflow_stores` as a source (None: MLflow is not installed)."""
    if not write_mlflow_stores(written, (name,)):
        return None
    folder = written / name
    if name == "mlflow-sqlite":
        return Source(name, folder, "mlflow.db")
    (loss,) = (folder / "mlruns").glob("*/*/metrics/loss")
    return Source(name, folder, str(loss.relative_to(folder)), text=True)


def mlflow_sources(work: Path, written: Path | None = None) -> list[Source]:
    """An MLflow file store and a sqlite store, written once under `written` (default
    `work/written`, apart from the copies `work/<source>/<damage>/`, so no store is copied into
    itself); none is committed. Empty when MLflow is not installed."""
    written = written or work / "written"
    return [s for s in (mlflow_source(written, n) for n in MLFLOW_STORES) if s is not None]


def sources(work: Path) -> list[Source]:
    return fixture_sources() + mlflow_sources(work)


# -- damage -----------------------------------------------------------------------------------------

_NUMBER = re.compile(rb"(?<![\w.])-?\d+\.\d+(?:[eE][-+]?\d+)?|(?<![\w.])\d{2,}(?![\w.])")


def damage(data: bytes, kind: str, rng: random.Random) -> bytes | None:
    """`data` with one damage of `kind`, or None when it does not apply (a text damage to a file
    with no lines or numbers)."""
    n = len(data)
    if kind == "cut":
        return data[:rng.randrange(n // 2, n - 1)]
    if kind == "flip8":
        d = bytearray(data)
        for off in rng.sample(range(n), min(8, n)):
            d[off] ^= 1 << rng.randrange(8)
        return bytes(d)
    if kind == "zero512":
        at = rng.randrange(max(1, n // 512)) * 512
        return data[:at] + bytes(min(512, n - at)) + data[at + 512:]
    if kind == "insert200":
        at = rng.randrange(1, n)
        return data[:at] + bytes(rng.getrandbits(8) for _ in range(200)) + data[at:]
    if kind == "dup4k":
        size = min(4096, n // 2)
        at = rng.randrange(0, n - size)
        return data[:at + size] + data[at:at + size] + data[at + size:]
    if kind == "badnum":
        lines = data.split(b"\n")
        inner = [i for i in range(1, len(lines) - 1) if _NUMBER.search(lines[i])] or \
                [i for i in range(len(lines)) if _NUMBER.search(lines[i])]
        if not inner:
            return None
        i = rng.choice(inner)
        m = rng.choice(list(_NUMBER.finditer(lines[i])))
        tok = m.group()
        k = rng.randrange(1, len(tok))
        lines[i] = lines[i][:m.start()] + tok[:k] + b"x" + tok[k:] + lines[i][m.end():]
        return b"\n".join(lines)
    if kind == "halfline":
        body = data.rstrip(b"\n")
        start = body.rfind(b"\n") + 1
        if start == 0:
            return None
        return body[:start + (len(body) - start) // 2]
    raise ValueError(kind)


def damages_for(src: Source) -> list[str]:
    return [d for d in DAMAGES if src.text or d not in TEXT_ONLY]


# -- reading ----------------------------------------------------------------------------------------


def _outcome(value: Any) -> float | None:
    if value is None:
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        return hash(str(value)) % 1_000_003 * 1.0
    return None if math.isnan(v) else v


def read_once(address: str) -> Read:
    """Every run of `address` as a command reads it: per run and key (count, last value), notes."""
    from rundiff_core.errors import RundiffError
    from rundiff_core.resolve import load_runs

    out = Read()
    t = time.perf_counter()
    try:
        if address.startswith("traj:"):
            from rundiff_adapters.trajectory.formats import read_trajectory_run

            traj = read_trajectory_run(address[len("traj:"):])
            for name, rec in traj.records.items():
                for r in [rec, *traj.repeats.get(name, [])]:
                    out.numbers[(str(name), str(r.repeat))] = (1, _outcome(r.passed))
            out.notes.update(traj.notes)
        else:
            for i, run in enumerate(load_runs(address)):
                run.history()
                _ = run.summary
                label = f"{i}:{run.name}"
                for key in run.metric_keys():
                    out.numbers[(label, key)] = (run.point_count(key), _outcome(run.last_value(key)))
                out.notes.update(run.fidelity)
    except RundiffError as exc:  # what a command says in one line (input or address)
        out.error = str(exc.args[0] if exc.args else exc)
    except Exception:  # noqa: BLE001 — the sweep reports a traceback, it never raises one
        out.traceback = traceback.format_exc()
    out.seconds = time.perf_counter() - t
    return out


def read_best(address: str, repeat: int) -> Read:
    best = read_once(address)
    for _ in range(repeat - 1):
        again = read_once(address)
        best.seconds = min(best.seconds, again.seconds)
    return best


def time_pair(clean: str, damaged: str, repeat: int) -> tuple[float, float]:
    """Best-of-`repeat` seconds of the undamaged and the damaged read, taken in turns, so both
    meet the same load on a shared machine (timed apart, a busy second skews the ratio)."""
    best_clean = best_damaged = math.inf
    for _ in range(repeat):
        best_clean = min(best_clean, read_once(clean).seconds)
        best_damaged = min(best_damaged, read_once(damaged).seconds)
    return best_clean, best_damaged


def _relocated(notes: set[str], root: Path, other: Path) -> set[str]:
    return {n.replace(str(root), str(other)) for n in notes}


def _hash(folder: Path) -> str:
    from rundiff_core.testing import hash_tree

    return hash_tree(str(folder))


def measure(src: Source, kind: str, work: Path, repeat: int = 3,
            clean: tuple[Path, Read] | None = None) -> Case | None:
    """One damaged copy of `src` read against its undamaged copy (both under `work`)."""
    if clean is None:
        clean = clean_copy(src, work, repeat)
    clean_root, good = clean
    blob = damage((src.folder / src.target).read_bytes(), kind,
                  random.Random(f"{SEED}:{src.name}:{kind}"))
    if blob is None:
        return None
    root = work / src.name / kind / src.folder.name
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(src.folder, root)
    target = root / src.target
    target.write_bytes(blob)
    old = time.time() - 86400
    os.utime(target, (old, old))  # an old file: not a live run being written
    before = _hash(root)
    got = read_once(src.address(root))
    seconds_clean = good.seconds
    if repeat > 1:  # timed (the script): the test reads once and times nothing
        seconds_clean, got.seconds = time_pair(src.address(clean_root), src.address(root), repeat)
    changed = any(got.numbers.get(k) != v for k, v in good.numbers.items()) or \
        bool(set(got.numbers) - set(good.numbers))
    new = sorted(_relocated(got.notes, root, clean_root) - good.notes)
    return Case(src.name, kind, good.points, got.points, changed, new, seconds_clean, got.seconds,
                got.error, got.traceback, _hash(root) == before, src.address(root),
                src.address(clean_root))


def clean_copy(src: Source, work: Path, repeat: int = 3) -> tuple[Path, Read]:
    root = work / src.name / "clean" / src.folder.name
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(src.folder, root)
    old = time.time() - 86400
    os.utime(root / src.target, (old, old))
    if repeat > 1:
        read_once(src.address(root))  # imports and first-touch costs go before any timing
    return root, read_best(src.address(root), repeat)


def sweep(work: Path, repeat: int = 3, only: set[str] | None = None,
          progress: Callable[[Case], None] | None = None) -> list[Case]:
    cases = []
    for src in sources(work):
        if only and src.name not in only:
            continue
        clean = clean_copy(src, work, repeat)
        for kind in damages_for(src):
            case = measure(src, kind, work, repeat, clean)
            if case is not None:
                cases.append(case)
                if progress:
                    progress(case)
    return cases


# -- thresholds and report --------------------------------------------------------------------------


def source_of(name: str, work: Path) -> Source:
    return next(s for s in sources(work) if s.name == name)


def floor(src: Source, kind: str) -> float | None:
    """The share of points the issue asks this case to keep (None: no floor, e.g. a cut tail)."""
    if kind in SMALL:
        return 0.99 if src.intact_copy else 0.9
    if kind in SHIFTED and src.shifted_rule:
        return 0.9
    return None


def failures(case: Case, src: Source) -> list[str]:
    """What this case breaks of the issue's 'Done when' (time aside)."""
    out = []
    if case.traceback:
        out.append("traceback")
    if not case.input_unchanged:
        out.append("input changed")
    if case.error and "\n" in case.error:
        out.append("error of more than one line")
    if case.changed and not case.noted:
        out.append("a number changed without a note")
    need = floor(src, case.damage) if case.points_clean >= MIN_POINTS else None
    if need is not None and case.kept < need:
        out.append(f"kept {case.kept:.1%} < {need:.0%}")
    return out


def markdown(cases: list[Case], work: Path) -> str:
    by = {s.name: s for s in sources(work)}
    rows = ["| source | damage | points kept | changed → noted | time vs undamaged | verdict |",
            "|---|---|---|---|---|---|"]
    for c in cases:
        bad = failures(c, by[c.source])
        kept = f"{c.points:,} / {c.points_clean:,} ({c.kept:.1%})" if not c.error else f"error: {c.error[:60]}"
        noted = "—" if not c.changed else ("yes" if c.noted else "**no**")
        rows.append(f"| {c.source} | {c.damage} | {kept} | {noted} | {c.ratio:.2f}× | "
                    f"{'ok' if not bad else '**' + '; '.join(bad) + '**'} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default="", help="comma-separated source names")
    ap.add_argument("--work", default="", help="where copies go (default: a temporary folder)")
    ap.add_argument("--notes", action="store_true", help="print each case's new notes")
    args = ap.parse_args(argv)
    only = set(filter(None, args.only.split(",")))
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="damage-sweep-"))
    cases = sweep(work, args.repeat, only or None)
    by = {s.name: s for s in sources(work)}
    if args.markdown:
        print(markdown(cases, work))
    else:
        for c in cases:
            bad = failures(c, by[c.source])
            kept = f"{c.points}/{c.points_clean} ({c.kept:6.1%})" if not c.error else f"error: {c.error[:80]}"
            noted = "-" if not c.changed else ("noted" if c.noted else "NOT NOTED")
            print(f"{c.source:14s} {c.damage:9s} {kept:24s} {noted:9s} {c.ratio:5.2f}x  "
                  f"{'ok' if not bad else '; '.join(bad)}")
            if args.notes:
                for n in c.new_notes[:4]:
                    print(f"      {n[:200]}")
            if c.traceback:
                print(c.traceback)
    small = [c for c in cases if c.damage in SMALL]
    shifted = [c for c in cases if c.damage in SHIFTED and by[c.source].shifted_rule]
    bad = [c for c in cases if failures(c, by[c.source])]
    print(f"\n{len(cases)} cases, {len(bad)} failing; small damage kept ≥ "
          f"{min((c.kept for c in small), default=1):.1%}; W&B/TB shifted bytes kept ≥ "
          f"{min((c.kept for c in shifted), default=1):.1%}; changed without a note: "
          f"{sum(c.changed and not c.noted for c in cases)}; slowest {max(c.ratio for c in cases):.2f}× "
          f"undamaged", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    raise SystemExit(main())
