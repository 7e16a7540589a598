"""The text-log grammar rules of commit 5b9bfe5, each held on two real logs from different public
repositories: the wild file the rule was written for and a second source
(tests/fixtures/realworld/textlogs/<rule>/<owner>-<repo>, see each PROVENANCE.md).

Every expectation is computed here from the file itself with `re` and the standard library —
never copied from rundiff's output: the records a line pattern finds, their values in file order,
their counters.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from readback import read_one as _run
from readback import values as _values

TESTS = Path(__file__).resolve().parents[1]
WILD = TESTS / "fixtures" / "wild"
TEXTLOGS = TESTS / "fixtures" / "realworld" / "textlogs"

MXNET = {
    "asymmnet": WILD / "spark001-asymmnet-checkpoints" / "tree" / "checkpoints" / "log.txt",
    "octconv": TEXTLOGS / "mxnet-bracket-counters" / "pistony-octconv" / "train_imagenet.log",
}
DAYS = {
    "scene-graph": WILD / "sak-18-scene-graph-generator-checkpoints" / "tree" / "checkpoints"
    / "log.txt",
    "maskrcnn-fork": TEXTLOGS / "day-durations" / "lishixuan001-maskrcnn-benchmark" / "outputs"
    / "origin" / "log.txt",
}
STAMPED = WILD / "idrpambudi-srn-deblur-checkpoints" / "tree" / "checkpoints" / "log.txt"
BANNERS = {
    "svm-smo": WILD / "chengyanhong929-svm-smo-0413-checkpoints" / "tree" / "checkpoints" / "log.txt",
    "1dcnn": TEXTLOGS / "phase-banners" / "jia-baos-1dcnn" / "checkpoints" / "log.txt",
}


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def _steps(run, key: str) -> list[float]:  # noqa: ANN001
    return [float(s) for s in run.history([key]).step]


def _same(got: list[float], want: list[float]) -> bool:
    """Equal lists of numbers, NaN equal to NaN (a diverged run prints `nan`)."""
    return len(got) == len(want) and all(
        (math.isnan(g) and math.isnan(w)) or g == pytest.approx(w, rel=1e-9, abs=1e-12)
        for g, w in zip(got, want, strict=True))


# -- 1. MXNet Speedometer / GluonCV bracket counters ----------------------------------------------
_BATCH = re.compile(r"^Epoch\[(\d+)\] Batch \[(\d+)\]\tSpeed: ([\d.]+) samples/sec"
                    r"\t([\w-]+)=([\d.]+)\tlr=([\d.]+)$")
_TRAINING = re.compile(r"^\[Epoch (\d+)\] training: ([\w-]+)=([\d.]+)$")
_SPEED = re.compile(r"^\[Epoch (\d+)\] speed: (\d+) samples/sec\ttime cost: ([\d.]+)$")
_VALIDATION = re.compile(r"^\[Epoch (\d+)\] validation: ([\w-]+)=([\d.]+) ([\w-]+)=([\d.]+)$")


def _mxnet(path: Path) -> dict:
    """The Speedometer's batch lines and the script's epoch lines, in file order, with the x each
    gets when appended sessions are counted on (a session ends where the epoch goes back)."""
    out: dict = {"batch": [], "training": {}, "time_cost": [], "validation": {}, "epoch_steps": []}
    shift, last_epoch, last_step = 0, None, None
    for line in _lines(path):
        m = _BATCH.match(line) or _TRAINING.match(line) or _SPEED.match(line) \
            or _VALIDATION.match(line)
        if m is None:
            continue
        epoch = int(m[1])
        if last_epoch is not None and epoch < last_epoch:
            shift = last_step + 1 - epoch  # a new session: counted on from the last step
        last_epoch, last_step = epoch, epoch + shift
        if m.re is _BATCH:
            out["batch"].append((int(m[2]), m[4], float(m[5]), float(m[6])))
        elif m.re is _TRAINING:
            out["training"].setdefault(m[2], []).append(float(m[3]))
        elif m.re is _SPEED:
            out["time_cost"].append(float(m[3]))
        else:
            out["epoch_steps"].append(last_step)
            for name, value in ((m[2], m[3]), (m[4], m[5])):
                out["validation"].setdefault(name, []).append(float(value))
    return out


@pytest.mark.parametrize("name", list(MXNET))
def test_mxnet_bracket_counters_are_the_epoch_and_batch(name):
    path = MXNET[name]
    want = _mxnet(path)
    assert len(want["batch"]) > 1000 and want["validation"]  # the patterns found the records
    run = _run(path)
    # `[Epoch 5] validation: top1=… top5=…`: the label names the fields after the counter
    for metric, values in want["validation"].items():
        assert _same(_values(run, f"validation/{metric}"), values), metric
        assert _steps(run, f"validation/{metric}") == want["epoch_steps"]
    # `[Epoch 5] training: accuracy=…` is kept apart from the Speedometer's running `accuracy=`
    for metric, values in want["training"].items():
        assert _same(_values(run, f"training/{metric}"), values), metric
        per_batch = [v for _, m, v, _ in want["batch"] if m == metric]
        assert _same(_values(run, metric), per_batch), metric
    assert _same(_values(run, "time_cost"), want["time_cost"])
    # `Epoch[5] Batch [349]` is two counters: the epoch the x, the batch index where in the epoch
    # a record was written (no measurement: not a series, as the trees' expected.json list them)
    assert _values(run, "batch") == []
    assert _same(_values(run, "lr"), [lr for _, _, _, lr in want["batch"]])
    # each epoch on its own x, even across appended sessions (octconv: six of them)
    steps = want["epoch_steps"]
    assert all(a < b for a, b in zip(steps, steps[1:], strict=False))


def test_octconv_metric_changes_with_mixup():
    """The second source logs `rmse=` while mixup is on and `accuracy=` after: two series each
    for the batch lines and the epoch lines, none merged into another."""
    want = _mxnet(MXNET["octconv"])
    assert set(want["training"]) == {"rmse", "accuracy"}
    assert set(want["validation"]) == {"err-top1", "err-top5"}
    keys = set(_run(MXNET["octconv"]).history().key.unique())
    assert {"rmse", "accuracy", "training/rmse", "training/accuracy"} <= keys


# -- 2. `eta: 1 day, 5:23:56` (str(datetime.timedelta)) -----------------------------------------
_ITER = re.compile(r"INFO: eta: (?:(\d+) days?, )?\d+:\d{2}:\d{2}  iter: (\d+)  loss: ([\d.]+) "
                   r"\(.*  max mem: (\d+)$")


@pytest.mark.parametrize("name", list(DAYS))
def test_an_eta_of_days_is_text_beside_the_record(name):
    path = DAYS[name]
    records = [m for line in _lines(path) if (m := _ITER.search(line))]
    with_days = [m for m in records if m[1]]
    assert with_days, "the file prints an eta of a day or more"
    run = _run(path)
    iters = [float(m[2]) for m in records]
    assert _steps(run, "loss") == iters  # the day-long lines are records too
    assert _same(_values(run, "loss"), [float(m[3]) for m in records])
    assert _same(_values(run, "max_mem"), [float(m[4]) for m in records])
    loss = dict(zip(_steps(run, "loss"), _values(run, "loss"), strict=True))
    for m in with_days:
        assert loss[float(m[2])] == pytest.approx(float(m[3]))
    keys = set(run.history().key.unique())
    assert not {k for k in keys if "eta" in k.lower() or "day" in k.lower()}


# -- 3. a trailing date-time field -------------------------------------------------------------
_EPOCH_STAMPED = re.compile(r"^Epoch (\d+): average_loss = ([\d.]+) \([\d.]+ data/s; [\d.]+ "
                            r"s/epoch\), (\d{4})-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$")


def test_a_trailing_date_time_is_when_not_a_number():
    """Only one source so far (no second log printing a bare date-time segment was found; see
    docs/first-sight.md 'Rules and their sources')."""
    records = [m for line in _lines(STAMPED) if (m := _EPOCH_STAMPED.match(line))]
    assert len(records) == len(_lines(STAMPED))
    run = _run(STAMPED)
    assert _steps(run, "average_loss") == [float(m[1]) for m in records]
    assert _same(_values(run, "average_loss"), [float(m[2]) for m in records])
    years = {float(m[3]) for m in records}
    history = run.history()
    assert set(history.key.unique()) == {"average_loss"}
    assert not years & set(history.value)


# -- 4. phase banners ------------------------------------------------------------------------------
_BANNER = re.compile(r"^=+(\w+) epoch \d+=+$")
_AVG = re.compile(r"^Epoch (\d+) \| avg_loss = (\S+)$")


@pytest.mark.parametrize("name", list(BANNERS))
def test_a_key_under_two_banners_is_one_series_per_phase(name):
    path = BANNERS[name]
    phase, by_phase = None, {}
    for line in _lines(path):
        if banner := _BANNER.match(line.strip()):
            phase = banner[1]
        elif record := _AVG.match(line.strip()):
            by_phase.setdefault(phase, []).append(float(record[2]))
    assert set(by_phase) == {"training", "validate"}
    run = _run(path)
    for ph, values in by_phase.items():
        assert _same(_values(run, f"{ph}/avg_loss"), values), ph
    assert "avg_loss" not in set(run.history().key.unique())
    assert any("phase banners" in note for note in run.fidelity)
