"""Runs named by a file prefix in one folder, and stage folders that are one run (issue 31): two
versions of GenoML's output read as a person reads them, and alike runs never merged."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from rundiff_adapters.local.shapes import files as files_layout
from rundiff_adapters.local.shapes.file_groups import prefix_groups

from rundiff_core import LayoutFolder
from rundiff_core.cli import main
from rundiff_core.resolve import load_runs

TESTS = Path(__file__).resolve().parents[1]
REAL = TESTS / "fixtures" / "realworld"
WILD = TESTS / "fixtures" / "wild"
GENOML_2020 = WILD / "genoml-genoml2-outputs-2020"
GENOML_NOW = WILD / "genoml-genoml2-outputs"


def _expected(tree: Path) -> dict[str, list[str]]:
    want = json.loads((tree / "expected.json").read_text())
    return {r["location"]: r["files"] for r in want["runs"]}


def test_runs_named_by_their_file_prefix_are_runs_each():
    outputs = GENOML_2020 / "tree" / "outputs"
    groups = prefix_groups(sorted(os.listdir(outputs)))
    want = _expected(GENOML_2020)
    assert {f"outputs/{p}*" for p in groups} == set(want)
    for prefix, names in groups.items():  # every file a person gives the run, `test.csv` none's
        assert sorted(f"outputs/{n}" for n in names) == sorted(want[f"outputs/{prefix}*"])
    runs = {os.path.basename(r.address): r for r in load_runs(f"local:{outputs}")}
    assert set(runs) == {f"{p}*" for p in groups}
    cv = runs["test_discrete_geno*"].summary
    assert "tunedModel_CV_Summary/Mean_CV_Score_BestTuned" in cv


def test_a_prefix_run_is_an_address(capsys):
    outputs = GENOML_2020 / "tree" / "outputs"
    assert main(["diff", f"{outputs}/test_continuous_geno*", f"{outputs}/test_discrete_geno*"]) == 0
    assert main(["ls", f"local:{outputs}/nothing*"]) == 2
    assert "no run named by the prefix 'nothing*'" in capsys.readouterr().err


@pytest.mark.parametrize("names", [
    ["train.csv", "val.csv", "test.csv"],  # one dot: an extension, not a part
    ["exp1.log.txt", "exp2.log.txt"],  # one file per prefix
    ["a.results.csv", "a.config.json", "b.summary.csv", "b.preds.csv"],  # no part recurs
])
def test_names_that_do_not_recur_per_prefix_group_nothing(names):
    assert prefix_groups(names) == {}


def test_no_other_corpus_folder_is_grouped_by_prefix():
    hits = [dp for root in (WILD, REAL) for dp, _, fn in os.walk(root) if prefix_groups(sorted(fn))]
    assert hits == [str(GENOML_2020 / "tree" / "outputs")]


def test_stage_folders_are_one_run():
    outputs = GENOML_NOW / "tree" / "outputs"
    runs = load_runs(f"local:{outputs}")
    assert [r.address for r in runs] == [f"local:{outputs}"]
    assert list(_expected(GENOML_NOW)) == ["outputs"]
    assert any("4 stage folders (Munge, Test, Train, Tune)" in n for n in runs[0].fidelity)


def test_a_benchmark_run_with_its_predictions_and_evaluations_folders_is_one_run(realdata):
    base = realdata / "agent-swebench-tdad-qwen-mini" / "claudecode_n_codex_swebench" / \
        "benchmark_runs"
    folder = base / "20260218_174616_current_vanilla_10_step30_compile_submit_stop"
    names = sorted(p.name for p in folder.iterdir())
    got = files_layout.claim(LayoutFolder(str(folder), [n for n in names if "." in n],
                                          [n for n in names if "." not in n]))
    assert got is not None and [r.path for r in got.runs] == [str(folder)]
    assert got.consumed == {"evaluations", "predictions"}


@pytest.mark.parametrize("folder", [
    WILD / "mqtth3w-pixel-level-segmentation-in-pets-unipr-unet-runs" / "tree" / "runs",
    WILD / "asrita14-sge-vs-zeroshot-cot-gsm8k" / "tree" / "results",
    REAL / "trees" / "tensorboard-reducer" / "tests" / "runs" / "strict",
    REAL / "mmdet2" / "eltd-mmdet" / "work_dirs",
])
def test_alike_runs_and_folders_of_histories_are_never_stages(folder):
    """Sub-folders whose names differ file by file (event files, per-run logs) but that hold
    histories, or that a named layout claims, stay runs of their own."""
    names = sorted(os.listdir(folder))
    got = files_layout.claim(LayoutFolder(str(folder), [n for n in names if (folder / n).is_file()],
                                          [n for n in names if (folder / n).is_dir()]))
    assert got is None or not any("stage folders" in r.reason for r in got.runs)
