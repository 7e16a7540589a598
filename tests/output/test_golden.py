"""Golden files: the Markdown every command prints on realistic fixtures, byte for byte.

The fixtures are written with the real writers (wandb's offline client, the journal format) from
seeded generators (`writers.py`); the temporary root, wandb's folder timestamp and watch's ages are
normalised. Regenerate after an intended output change with

    RUNDIFF_REGEN_GOLDEN=1 pytest -p no:cacheprovider tests/output/test_golden.py

and review the diff of tests/golden/ like code (tests/golden/README.md says the same).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from rundiff_core.cli import main

from .writers import normalise, write_student_and_baselines, write_sweep

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
REGEN = os.environ.get("RUNDIFF_REGEN_GOLDEN") == "1"
_AGE = re.compile(r"\d+(\.\d+)? (s|min|h|days|years) ago")


def _check(name: str, text: str) -> None:
    path = GOLDEN / f"{name}.md"
    if REGEN:
        path.write_text(text, encoding="utf-8")
        return
    assert path.is_file(), f"missing {path}: run with RUNDIFF_REGEN_GOLDEN=1 to write it"
    assert text == path.read_text(encoding="utf-8"), (
        f"{name} output changed; if intended, regenerate with RUNDIFF_REGEN_GOLDEN=1 and review")


def _out(capsys, *argv) -> str:
    main(list(argv))
    return capsys.readouterr().out


@pytest.fixture(scope="module")
def scene(tmp_path_factory):
    root = tmp_path_factory.mktemp("scene")
    return root, write_student_and_baselines(root)


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    root = tmp_path_factory.mktemp("many")
    return root, write_sweep(root / "sweep", spike=(1, 150))


def test_compare_wide(wide, capsys):
    root, runs = wide
    _check("compare-wide", normalise(_out(capsys, "compare", runs[64], runs[256]), root))


def test_compare_student_and_baselines(scene, capsys):
    root, p = scene
    out = _out(capsys, "compare", p["baseline"], p["student"], p["coarse"])
    _check("compare-seeds", normalise(out, root))


def test_diff_wide(wide, capsys):
    root, runs = wide
    _check("diff-wide", normalise(_out(capsys, "diff", runs[64], runs[256]), root))


def test_diff_seed_arms(scene, capsys):
    root, p = scene
    out = _out(capsys, "diff", p["baseline"] + "/seed-0", p["coarse"], "--metric", "train/loss")
    _check("diff-seeds", normalise(out, root))


def test_rank(many, capsys):
    root, sweep = many
    _check("rank", normalise(_out(capsys, "rank", str(sweep)), root))


def test_ablate(many, capsys):
    root, sweep = many
    out = _out(capsys, "ablate", str(sweep / "lr-0.2"), str(sweep / "lr-0.3"), "--baseline",
               str(sweep / "lr-0.1"))
    _check("ablate", normalise(out, root))


def test_report(many, capsys):
    root, sweep = many
    _check("report", normalise(_out(capsys, "report", str(sweep)), root))


def test_watch(many, tmp_path, capsys, monkeypatch):
    root, sweep = many
    monkeypatch.setenv("RUNDIFF_CACHE_DIR", str(tmp_path / "cache"))
    out = _out(capsys, "watch", "--once", str(sweep / "lr-0.2"), str(sweep / "lr-0.4"))
    _check("watch", _AGE.sub("<AGE> ago", normalise(out, root)))


def test_trajectories_summary(realdata, tmp_path, capsys):
    tau = realdata / "agent-taubench-historical" / "historical_trajectories" / "gpt-4o-airline.json"
    if not tau.is_file():
        pytest.skip("the tau-bench sample is not in the real data folder")
    out = _out(capsys, "trajectories", f"{tau}#trial=0", f"traj:{tau}#trial=1", "--out",
               str(tmp_path / "out"))
    _check("trajectories", normalise(out, tmp_path).replace(str(realdata), "<REALDATA>"))
