"""Each (address, keys) is read once per command: `rundiff diff X X`, a baseline that is also a
seed sibling, repeated passes. Outside a command (the Python API, notebooks) nothing is kept, and
`watch` reads afresh on every poll."""

from __future__ import annotations

import json
import os

import pytest
from rundiff_adapters.journal.source import JournalSource

from rundiff_core.cli import main
from rundiff_core.demo import write_journal_run
from rundiff_core.opening import reuse_loads
from rundiff_core.resolve import load_run, open_source


@pytest.fixture
def reads(monkeypatch):
    """How often the real journal reader was asked for each run (the reader still does the work)."""
    counts: dict[str, int] = {}
    real = JournalSource.load_history

    def counting(self, ref, keys=None):
        counts[ref.address] = counts.get(ref.address, 0) + 1
        return real(self, ref, keys)

    monkeypatch.setattr(JournalSource, "load_history", counting)
    return counts


def _arm(root, name, lr):
    for seed in range(3):
        write_journal_run(str(root / name / f"seed-{seed}"), config={"lr": lr, "seed": seed},
                          rows=[{"step": s, "loss": lr * 10 + 1 / (s + 1) + seed * 1e-3}
                                for s in range(0, 101, 10)])
    return str(root / name / "seed-0")


def test_diff_of_a_run_with_itself_reads_each_file_once(tmp_path, reads, capsys):
    a = _arm(tmp_path, "exp-a", 0.1)
    assert main(["diff", a, a, "--format", "json"]) == 0
    json.loads(capsys.readouterr().out)
    assert reads and max(reads.values()) == 1, reads


def test_scope_shares_sources_and_runs_and_nothing_outside_it(tmp_path, reads):
    a = _arm(tmp_path, "exp-a", 0.1)
    with reuse_loads():
        assert open_source(a) is open_source("journal:" + a)
        first, second = load_run(a), load_run(a)
        assert first is second
        first.history(), second.series("loss")
    assert sum(reads.values()) == 1
    outside = load_run(a), load_run(a)
    assert outside[0] is not outside[1]


def test_watch_sees_points_appended_between_polls(tmp_path, capsys):
    run = write_journal_run(str(tmp_path / "live"), config={"lr": 0.1},
                            rows=[{"step": s, "loss": 1 / (s + 1)} for s in range(0, 50, 10)])
    assert main(["watch", run, "--once", "--format", "json"]) in (0, 1)
    before = json.loads(capsys.readouterr().out)["runs"][0]["last_step"]
    with open(os.path.join(run, "metrics.jsonl"), "a") as fh:
        fh.write(json.dumps({"step": 90, "loss": 0.01}) + "\n")
    assert main(["watch", run, "--once", "--format", "json"]) in (0, 1)
    assert before == 40 and json.loads(capsys.readouterr().out)["runs"][0]["last_step"] == 90
