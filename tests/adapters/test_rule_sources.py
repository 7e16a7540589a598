"""Each first-sight rule of issue 31 held on a second real source (tests/fixtures/realworld/<rule>/):
files from a public repository other than the one the rule was first written for, copied byte for
byte with their provenance. Every expectation here is computed from the file with the standard
library (or read from it by hand and written down), never taken from rundiff's output."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from rundiff_adapters.local.documents import printed_table

from rundiff_core.resolve import load_runs

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "realworld"


# -- a text report of alike sections under numbered titles: a run per section --------------------
BCI = REAL / "text-sections" / "duckycoders-bci" / "results"


def _subject_lines(path: Path) -> dict[str, dict[str, float]]:
    """`Training on subject N` then `Subject: N   seed 1   time: 4.7 m   valid_acc: …` (stdlib)."""
    out: dict[str, dict[str, float]] = {}
    title = None
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.fullmatch(r"Training on subject (\d+)", line.strip())
        if m:
            title = f"Subject {m.group(1)}"
            continue
        m = re.match(r"Subject: (\d+)\s+seed (\d+)\s+time: ([\d.]+) m\s+valid_acc: ([\d.]+)\s+"
                     r"valid_loss: ([\d.]+)", line)
        if m and title == f"Subject {m.group(1)}":
            out[title] = {"subject": int(m.group(1)), "seed": int(m.group(2)),
                          "time_m": float(m.group(3)), "valid_acc": float(m.group(4)),
                          "valid_loss": float(m.group(5))}
    return out


def test_a_second_atcnet_run_is_a_run_per_subject():
    """Duckycoders/BCI ran ATCNet's main_TrainValTest.py on its own data (times 1.6–5.4 m, subject 7
    at 0.1724): nine `Subject N` runs, each with its subject and seed as config and its final
    numbers as summary, no curves; `best models.txt` (weight paths) is no run."""
    want = _subject_lines(BCI / "log.txt")
    assert len(want) == 9
    runs = {r.address.rsplit("#", 1)[1]: r for r in load_runs(f"local:{BCI}")}
    assert set(runs) == set(want)
    for name, w in want.items():
        run = runs[name]
        assert run.flat_config == {"subject": w["subject"], "seed": w["seed"]}, name
        assert run.summary["valid_acc"] == pytest.approx(w["valid_acc"]), name
        assert run.summary["valid_loss"] == pytest.approx(w["valid_loss"]), name
        assert run.summary["time_m"] == pytest.approx(w["time_m"]), name
        assert not run.metric_keys(), name
    assert runs["Subject 7"].summary["valid_acc"] == 0.1724  # read by hand from the file


# -- a printed report in a document is a result, not a setting -------------------------------------
ALLIE = REAL / "printed-reports" / "jim-schwoebel-allie" / "tests" / "helpers" / "models"
ALLIE_MODELS = sorted(ALLIE.glob("*_models/test_tpot_classifier/model/test_tpot_classifier.json"))


@pytest.mark.parametrize("path", ALLIE_MODELS, ids=lambda p: p.parts[-4])
def test_allie_model_report_is_a_result_and_its_settings_are_config(path):
    """Allie's model JSON (`metrics` with sklearn's `classification_report` string, `settings`,
    device info), named alone: one run; the report is a printed table, never a setting (two
    models' reports differ, and would otherwise show in every config diff); the measured numbers
    are its summary; `settings` values are config."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    report = doc["metrics"]["classification_report"]
    assert report.lstrip().startswith("precision    recall  f1-score   support")
    (run,) = load_runs(f"local:{path}")
    flat = run.flat_config
    assert not any("classification_report" in k for k in flat), sorted(flat)
    assert not any(isinstance(v, str) and "precision    recall" in v for v in flat.values())
    assert printed_table(report)  # the shared reader's test of a printed table holds on it
    numbers = {k: v for k, v in doc["metrics"].items()
               if isinstance(v, (int, float)) and not isinstance(v, bool)}
    assert len(numbers) == 10
    for key, value in numbers.items():
        got = [v for k, v in run.summary.items() if k.split(".")[-1] == key]
        assert got == [pytest.approx(value)], (key, sorted(run.summary))
    settings = {k: v for k, v in doc["settings"].items() if isinstance(v, (int, float, str, bool))}
    assert settings["test_size"] == 0.1
    found = {k.split(".")[-1]: v for k, v in flat.items()}
    assert found.get("test_size") == 0.1 and found.get("feature_number") == 20
    # where and when it ran is metadata: never a setting, and its numbers (`boot time`, `space
    # left`) never a result
    device = _numbers(doc["device info"])
    assert device and not any(k.split(".")[-1] in {p.split(".")[-1] for p in device}
                              for k in list(flat) + list(run.summary))
    assert not {"created date", "session id"} & set(flat)
    assert {"created date", "session id", "device info.operating system"} <= set(run.meta)


# -- results documents beside run documents join their companion ------------------------------------
SGE = Path(__file__).resolve().parents[1] / "fixtures" / "wild" / \
    "asrita14-sge-vs-zeroshot-cot-gsm8k" / "tree" / "results" / "metrics"


def _numbers(data: object, prefix: str = "") -> dict[str, float]:
    """Every number of a JSON object by its dotted path (stdlib walk)."""
    out: dict[str, float] = {}
    if isinstance(data, dict):
        for k, v in data.items():
            out.update(_numbers(v, f"{prefix}{k}."))
    elif isinstance(data, int | float) and not isinstance(data, bool):
        out[prefix[:-1]] = float(data)
    return out


def test_a_metrics_document_joins_the_run_document_it_is_named_for():
    """The rule's second source (beside mayankchoudhary76's `X_eval.json` by `X_report.json`):
    asrita14's `gsm8k_<run>_metrics.json` (the per-method scores) beside `gsm8k_<run>.json` (its
    config and per-question results) is that run's summary, never a run of its own."""
    pairs = {p.name.replace("_metrics.json", ".json"): p for p in SGE.glob("*_metrics.json")
             if (SGE / p.name.replace("_metrics.json", ".json")).is_file()}
    assert len(pairs) == 4
    runs = {Path(r.address.split(":", 1)[1]).name: r for r in load_runs(f"local:{SGE}")}
    assert not any(name.endswith("_metrics.json") for name in runs), sorted(runs)
    for name, companion in pairs.items():
        want = _numbers(json.loads(companion.read_text(encoding="utf-8"))["metrics"])
        assert want, companion.name
        summary = runs[name].summary
        for key, value in want.items():
            got = [v for k, v in summary.items() if k.endswith(key)]
            assert got and got[0] == pytest.approx(value), (name, key)
