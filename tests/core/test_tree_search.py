"""A downloaded repository's log tree: `rundiff ls TOP` finds every run as deep as it is, lists
every store side by side, says where it found them — or that the budget ran out and where to
look (rundiff_core/tree.py). The run counts come from each tree's expected.json, counted by hand
from the files (tests/fixtures/realworld/trees/*/PROVENANCE.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rundiff_core.cli import main
from rundiff_core.testing import hash_tree
from rundiff_core.tree import search_tree

TREES = Path(__file__).resolve().parents[1] / "fixtures" / "realworld" / "trees"
NAMES = sorted(p.name for p in TREES.iterdir() if (p / "expected.json").is_file())


def _expected(name: str) -> dict:
    return json.loads((TREES / name / "expected.json").read_text())


@pytest.mark.parametrize("name", NAMES)
def test_ls_on_the_top_folder_finds_every_run(name, capsys):
    tree = TREES / name
    before = hash_tree(tree)
    assert main(["ls", str(tree), "--no-points", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == _expected(name)["runs"], [r["address"] for r in rows]
    assert len({r["address"] for r in rows}) == len(rows)  # no run listed twice
    assert hash_tree(tree) == before  # read-only


def test_runs_below_a_sniff_s_depth_are_said_with_where_they_are(capsys):
    tree = TREES / "safe-experts"  # data/old/exp0/exp0_s0: 4 levels down
    assert main(["ls", str(tree), "--no-points"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# 4 run(s) under data/ (local)")
    assert main(["detect", str(tree)]) == 0
    out = capsys.readouterr().out
    assert "found deeper" in out and "local:" in out and f"rundiff ls {tree}" in out


def test_stores_side_by_side_are_all_listed_and_an_empty_one_is_said(capsys):
    tree = TREES / "it3385-mlops-assignment"  # notebooks/: mlruns/ + an empty mlflow.db + TB files
    assert main(["ls", str(tree), "--no-points"]) == 0
    out = capsys.readouterr().out
    assert "(tensorboard)" in out and "(mlflow)" in out
    assert "notebooks/mlflow.db: an MLflow sqlite database, but it names no runs" in out


def test_several_roots_of_one_tracker_are_each_listed(capsys):
    tree = TREES / "causalregnet"  # lightning_logs/ at the top, in examples/ and in notebooks/
    found = search_tree(str(tree))
    assert sorted(Path(s.path).name for s in found.stores) == ["causalregnet", "examples", "notebooks"]
    assert found.n_runs == 6 and not found.exhausted


def test_a_spent_budget_is_said_with_where_to_look(tmp_path):
    tree = TREES / "modded-nanogpt"
    found = search_tree(str(tree), max_folders=2)
    assert found.exhausted and found.n_runs < 5
    line = found.summary_lines()[-1]
    assert line.startswith("search budget spent after 2 folders") and "records" in line
    assert "name a sub-folder or a scheme" in line


def test_many_run_commands_read_every_store_below_a_bare_folder(capsys):
    tree = TREES / "safe-experts"
    assert main(["rank", str(tree), "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["n_runs"] == 4


def test_trajectory_files_found_below_are_named_with_the_command(tmp_path, capsys):
    real = (Path(__file__).resolve().parents[2].parent / "shared" / "realdata"
            / "agent-taubench-historical" / "historical_trajectories")
    if not real.is_dir():
        pytest.skip("../shared/realdata is not beside the checkout")
    deep = tmp_path / "results" / "airline" / "2024"
    deep.mkdir(parents=True)
    for f in real.iterdir():
        if f.suffix == ".json":
            (deep / f.name).write_bytes(f.read_bytes())
    found = search_tree(str(tmp_path))
    lines = found.summary_lines()
    assert any("trajectory file(s) under results/airline/2024/" in x
               and "`rundiff trajectories A B`" in x for x in lines), lines


def test_a_folder_of_nothing_is_a_clear_error(tmp_path, capsys):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "notes.md").write_text("# nothing here\n")
    assert main(["ls", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rundiff: error: no run found in") and "Traceback" not in err
    assert "a/b/notes.md" in err and "`rundiff ls PATH`" not in err  # named, with its shape
    (tmp_path / "a" / "b" / "notes.md").unlink()
    assert main(["ls", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rundiff: error: no run found in") and "no file below it is a run log" in err


def test_ls_of_a_folder_nothing_reads_names_the_files_it_did_not_understand(tmp_path, capsys):
    """`ls FOLDER` ends by listing what it did not understand — also when that is everything:
    the error names each file and what it looks like, not only that no adapter claimed it."""
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "train.out").write_text(
        "".join(f"starting worker {i} on node gpu{i}\n" for i in range(40)))
    (tmp_path / "run" / "blob.dat").write_bytes(bytes(range(256)) * 8)
    assert main(["ls", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rundiff: error: no run found in {tmp_path}: not understood: ")
    assert "run/train.out: text" in err and "Traceback" not in err
    assert "rundiff ls local:FILE" in err


REAL = TREES.parent
SOURCES = sorted(p.relative_to(REAL).as_posix() for p in REAL.glob("*/*")
                 if (p / "PROVENANCE.md").is_file() and p.parent.name != "trees")
NO_RUNS = {"yaml-pyobject/carlschader-arcface-lightning"}  # an hparams.yaml, no metrics at all


@pytest.mark.parametrize("source", SOURCES)
def test_ls_on_the_top_folder_of_every_real_source_finds_runs(source, capsys):
    """The first command a user types on a downloaded folder finds its runs — or says plainly
    that there are none (one line, exit 2)."""
    code = main(["ls", str(REAL / source), "--no-points", "--format", "json"])
    out = capsys.readouterr()
    if source in NO_RUNS:
        assert code == 2 and out.err.startswith("rundiff: error:") and "Traceback" not in out.err
        return
    assert code == 0, out.err
    assert json.loads(out.out), source
