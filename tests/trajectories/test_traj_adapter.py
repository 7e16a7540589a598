"""The trajectory adapter through the front door: registration, sniffing, the RunSource."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import trajgen
from rundiff_adapters.trajectory import sniff_kind

from rundiff_core.plugins import Plugins
from rundiff_core.resolve import load_runs, open_source


def test_registered_with_scheme_and_priority() -> None:
    spec = Plugins(entry_points=False).registry.by_scheme("traj")
    assert spec is not None and spec.name == "trajectory" and spec.priority == 60


def test_sniff_claims_only_trajectory_files(tmp_path: Path) -> None:
    s = trajgen.scenario({"both_pass": 2})
    assert sniff_kind(trajgen.write_export(tmp_path / "a.json", s.a)) == "traj"
    assert sniff_kind(trajgen.write_export(tmp_path / "a.jsonl", s.a, style="jsonl")) == "traj"
    (tmp_path / "metrics.json").write_text(json.dumps({"loss": [1, 2], "step": [0, 1]}))
    (tmp_path / "fake.eval").write_bytes(b"not a zip")
    (tmp_path / "notes.txt").write_text('{"name": "x", "messages": []}')
    for name in ("metrics.json", "fake.eval", "notes.txt"):
        assert sniff_kind(str(tmp_path / name)) is None
    assert sniff_kind(str(tmp_path)) is None


def test_source_lists_a_folder_and_loads_summaries(tmp_path: Path) -> None:
    s = trajgen.scenario({"both_pass": 3, "persistence": 2})
    trajgen.write_export(tmp_path / "a.json", s.a)
    trajgen.write_export(tmp_path / "b.jsonl", s.b, style="jsonl")
    (tmp_path / "other.json").write_text("{}")
    runs = load_runs(f"traj:{tmp_path}")
    assert [r.run_id for r in runs] == ["a", "b"]
    a = runs[0]
    assert a.adapter == "trajectory" and a.summary["tasks"] == 5 and a.summary["passed"] == 3
    assert a.summary["pass_rate"] == 0.6 and a.config["harness"] == "toy-harness"
    assert a.history().empty  # trajectories are not metric histories
    src = open_source(str(tmp_path / "a.json"))  # bare path → sniffed
    assert type(src.inner).__name__ == "TrajectorySource" and len(src.list_runs()) == 1


def test_plugin_and_engine_import_no_inspect_ai() -> None:
    code = ("import sys, rundiff_adapters.trajectory, rundiff_core.trajectories, "
            "rundiff_core.commands.trajectories, rundiff_adapters.trajectory.source; "
            "assert 'inspect_ai' not in sys.modules, 'inspect_ai imported'")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
