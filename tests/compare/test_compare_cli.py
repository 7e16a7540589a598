"""`rundiff compare` end to end on real journal runs written to disk."""

from __future__ import annotations

import csv
import io
import json

import pytest
from compare_helpers import journal

from rundiff_core.cli import main
from rundiff_core.testing import hash_tree

BASE_STEPS = range(0, 101)


def base_loss(step: int, seed: int) -> float:
    return round(3.0 - 0.02 * step + 0.01 * seed, 6)


def base_acc(step: int, seed: int) -> float:
    return round(0.1 + 0.005 * step + 0.001 * seed, 6)


@pytest.fixture
def runs(tmp_path):
    root = tmp_path / "runs"
    for seed in range(3):
        rows = []
        for s in BASE_STEPS:
            rows.append({"step": s, "train/loss": base_loss(s, seed), "lr": 1e-3})
            if s % 10 == 0:
                rows.append({"step": s, "eval/accuracy": base_acc(s, seed)})
        journal(str(root / "imagenet-resnet50-baseline-bs256" / f"seed-{seed}"), rows, seed=seed)
    rows = []
    for s in range(0, 12):
        rows.append({"step": s, "train_loss": round(3.2 - 0.03 * s, 6), "lr": 2e-3})
        if s % 10 == 0:
            rows.append({"step": s, "eval/accuracy": round(0.12 + 0.004 * s, 6)})
    journal(str(root / "imagenet-resnet50-distill-from-vit-l" / "seed-0"), rows, finished=False,
            seed=0)
    rows = [{"step": s, "train/loss": round(2.9 - 0.01 * s, 6)} for s in range(0, 101, 5)]
    journal(str(root / "imagenet-resnet50-coarse-logging"), rows, name="imagenet-resnet50-coarse-logging")
    return root


def _run(args, capsys):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_markdown_report_slices_every_baseline_at_the_student_step(runs, capsys):
    before = hash_tree(runs)
    base = str(runs / "imagenet-resnet50-baseline-bs256")
    student = str(runs / "imagenet-resnet50-distill-from-vit-l" / "seed-0")
    coarse = str(runs / "imagenet-resnet50-coarse-logging")
    code, out, err = _run(["compare", base, student, coarse], capsys)
    assert code == 0, err
    assert hash_tree(runs) == before  # read-only
    assert "# Same-step comparison at step 11 — student: " in out
    assert "(student: the only run still training" in out
    assert "## Proxy metrics" in out and "## Downstream metrics" in out
    header = next(line for line in out.splitlines() if line.startswith("| metric"))
    assert "(student)" in header and "| Δ " in header
    assert "train/loss → train_loss" in out  # the mapping is reported
    assert "Not compared, diagnostics (name them with --metric): lr" in out
    # one row per metric, one column per arm: the baseline group at step 11, never its final value
    mean = sum(base_loss(11, s) for s in range(3)) / 3
    (row,) = [line for line in out.splitlines() if line.startswith("| train_loss")]
    assert f"{mean:.4f} ±" in row and "(N=3)" in row
    assert f"{base_loss(100, 0):.4f}" not in row
    assert "cells at step 11 unless marked @" in out
    # the coarse run has no step 11: its cell says @ 10 and only it gets a footnote
    assert "2.8000 @ 10 [^1]" in row and "[^2]" not in out
    (foot,) = [line for line in out.splitlines() if line.startswith("[^")]
    assert "coarse-logging" in foot and "no point at step 11, the nearest logged step 10" in foot
    # eval/accuracy: the student logged it last at step 10, so everyone is read at 10
    assert "Read where the student last logged them" in out and "eval/accuracy at step 10" in out
    # the legend names every run by its name and run id, once; addresses only with --trace
    legend = [line for line in out.splitlines() if line.startswith("- **")]
    assert len(legend) == 3 and not any("journal:" in line for line in legend)
    assert any("run id seed-0" in line and "single-seed" in line
               and "from-vit-l/seed-0" in line for line in legend)
    assert any("3 seeds" in line and "run ids seed-0, seed-1, seed-2" in line for line in legend)
    assert any("run id imagenet-resnet50-coarse-logging" in line for line in legend)
    reading = out.split("## Reading", 1)[1].strip()
    assert 1 <= reading.count(". ") + 1 <= 3  # at most three sentences
    assert "## Reading" in out


def test_json_values_are_the_written_points(runs, capsys):
    base = str(runs / "imagenet-resnet50-baseline-bs256")
    student = str(runs / "imagenet-resnet50-distill-from-vit-l" / "seed-0")
    code, out, _ = _run(["compare", base, student, "--format", "json", "--metric", "train/loss"],
                        capsys)
    assert code == 0
    d = json.loads(out)
    assert d["schema"] == "rundiff.compare/1" and d["current_x"] == 11
    (m,) = d["metrics"]
    assert m["metric"] == "train/loss" and m["target"] == 11
    student_row, base_row = m["rows"]
    assert student_row["value"] == pytest.approx(3.2 - 0.03 * 11)
    assert [c["value"] for c in base_row["cells"]] == [base_loss(11, s) for s in range(3)]
    assert {c["step_used"] for c in base_row["cells"]} == {11}
    assert [c["key"] for c in student_row["cells"]] == ["train_loss"]


def test_csv_has_arm_and_seed_lines_with_provenance(runs, capsys):
    base = str(runs / "imagenet-resnet50-baseline-bs256")
    student = str(runs / "imagenet-resnet50-distill-from-vit-l" / "seed-0")
    code, out, _ = _run(["compare", base, student, "--format", "csv", "--metric", "train/loss"], capsys)
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    seeds = [r for r in rows if r["level"] == "seed" and r["role"] == "baseline"]
    assert len(seeds) == 3 and all(r["address"].startswith("journal:") for r in seeds)
    assert [float(r["value"]) for r in seeds] == [base_loss(11, s) for s in range(3)]
    arm = next(r for r in rows if r["level"] == "arm" and r["role"] == "baseline")
    assert float(arm["n"]) == 3 and arm["state"] == "ok"


def test_trace_column_replaces_footnotes(runs, capsys):
    code, out, _ = _run(["compare", str(runs / "imagenet-resnet50-baseline-bs256"),
                         str(runs / "imagenet-resnet50-distill-from-vit-l" / "seed-0"), "--trace"],
                        capsys)
    assert code == 0
    header = next(line for line in out.splitlines() if line.startswith("| metric"))
    assert header.rstrip(" |").endswith("source")
    assert "## Sources" not in out and "[^1]" not in out


def test_student_flag_and_interpolation(runs, capsys):
    coarse = str(runs / "imagenet-resnet50-coarse-logging")
    base = str(runs / "imagenet-resnet50-baseline-bs256" / "seed-1")
    code, out, _ = _run(["compare", base, "--student", coarse, "--no-seeds", "--align",
                         "interpolate", "--format", "json"], capsys)
    assert code == 0, out
    d = json.loads(out)
    assert d["student"]["label"] == "imagenet-resnet50-coarse-logging"
    assert d["student_reason"] == "named with --student"
    m = d["metrics"][0]
    assert m["target"] == 100 and m["rows"][1]["cells"][0]["value"] == base_loss(100, 1)


def test_a_run_named_without_an_address_is_found_in_the_project(runs, capsys, monkeypatch):
    monkeypatch.chdir(runs.parent)
    code, out, err = _run(["compare", "imagenet-resnet50-coarse-logging",
                           "imagenet-resnet50-distill-from-vit-l/seed-0", "--format", "json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    # its path below the runs' common folder, its longest part shortened to fit 40 characters
    assert d["student"]["label"] == "imagenet-resnet5…still-from-vit-l/seed-0"


def test_project_file_groups(runs, capsys, monkeypatch):
    monkeypatch.chdir(runs.parent)
    (runs.parent / "rundiff.toml").write_text('[groups]\ndownstream = ["*loss*"]\n')
    code, out, _ = _run(["compare", "runs/imagenet-resnet50-baseline-bs256",
                         "runs/imagenet-resnet50-distill-from-vit-l/seed-0", "--format", "json"], capsys)
    assert code == 0
    d = json.loads(out)
    loss = next(m for m in d["metrics"] if m["metric"] == "train_loss")
    assert loss["group"] == "downstream" and loss["group_source"].endswith("rundiff.toml")


@pytest.mark.parametrize("extra, message", [
    (["--metric", "no/such/metric"], "not logged by any run"),
    (["--map", "oops"], "is not A=B"),
    (["--smooth", "1.5"], "--smooth"),
    (["--x", "tokens"], "no unique 'tokens' key"),
])
def test_user_errors_exit_2_with_one_line(runs, capsys, extra, message):
    code, out, err = _run(["compare", str(runs / "imagenet-resnet50-baseline-bs256"),
                           str(runs / "imagenet-resnet50-distill-from-vit-l" / "seed-0"), *extra],
                          capsys)
    assert code == 2 and message in err and "Traceback" not in err


def test_one_run_is_not_a_comparison(runs, capsys):
    code, _, err = _run(["compare", str(runs / "imagenet-resnet50-coarse-logging")], capsys)
    assert code == 2 and "at least two" in err


def test_help_lists_the_options(capsys):
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    out = capsys.readouterr().out
    for flag in ("--student", "--metric", "--map", "--proxy", "--downstream", "--align", "--x",
                 "--format", "--html", "--png", "--smooth", "--trace"):
        assert flag in out


def test_a_folder_of_runs_splits_into_seed_group_arms(runs, capsys):
    code, out, err = _run(["compare", str(runs), "--format", "json"], capsys)
    assert code == 0, err
    d = json.loads(out)
    arms = sorted((b["label"].rsplit("runs/", 1)[-1], b["n_seeds"])
                  for b in [d["student"], *d["baselines"]])
    assert arms == [("imagenet-resnet50-baseline-bs256", 3),  # the folder its seeds share
                    ("imagenet-resnet50-coarse-logging", 1),
                    ("imagenet-resnet5…still-from-vit-l/seed-0", 1)]
    code, out, _ = _run(["compare", str(runs), "--no-seeds", "--format", "json"], capsys)
    assert code == 0 and len(json.loads(out)["baselines"]) == 4
