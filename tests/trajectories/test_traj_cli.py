"""`rundiff trajectories` end to end: outputs, redaction, read-only inputs, user errors."""

from __future__ import annotations

import csv
import hashlib
import json
import os
from pathlib import Path

import pytest
import trajgen

from rundiff_core.cli import main

SECRET = "sk-proj-SECRETSECRETSECRET1234567890"


def _exports(tmp_path: Path, counts: dict[str, int] | None = None) -> tuple[trajgen.Scenario, Path, Path]:
    s = trajgen.scenario(counts or {"both_pass": 4, "both_fail": 2, "regression": 2, "persistence": 11,
                                    "knowledge": 2, "format": 2, "thrash": 1, "holdout_gap": 1, "b_missing": 1})
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    a = Path(trajgen.write_export(inputs / "a.json", s.a))
    b = Path(trajgen.write_export(inputs / "b.jsonl", s.b, style="jsonl"))
    return s, a, b


def _hashes(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def test_end_to_end_outputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    s, a, b = _exports(tmp_path)
    before = _hashes(a.parent)
    out = tmp_path / "out"
    assert main(["trajectories", str(a), str(b), "--out", str(out), "--samples", "2"]) == 0
    assert _hashes(a.parent) == before  # read-only: same files, same bytes
    printed = capsys.readouterr().out
    assert f"report: {out / 'report.md'}" in printed
    assert "A✗B✓ 16 (reachable gap)" in printed and "verdict: RL-shaped" in printed

    matrix = json.loads((out / "matrix.json").read_text())
    assert matrix["schema"] == "rundiff.trajectory-diff/1" and len(matrix["pairs"]) == 1
    pair = matrix["pairs"][0]
    assert pair["matrix"]["train"]["regression"]["tasks"] == s.names("regression")
    assert pair["gap_classes"]["counts"]["persistence"] == 12

    with open(out / "tasks.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert sorted(r["task"] for r in rows) == sorted(s.kinds)
    by = {r["task"]: r for r in rows}
    assert by["format-000"]["gap_class"] == "format" and int(by["format-000"]["a_invalid_calls"]) == 1
    assert by["b_missing-000"]["unmatched"] == "B: missing"
    assert by["holdout_gap-000"]["holdout"] == "true"

    lines = [json.loads(x) for x in (out / "warm_start.jsonl").read_text().splitlines()]
    assert sorted(x["task"] for x in lines) == sorted(pair["warm_start"]["tasks"])
    assert all(x["source"] == str(b.resolve()) and "messages" not in x for x in lines)

    report = (out / "report.md").read_text()
    for heading in ("### 1. Alignment", "### 2. Outcome matrix", "### 3. Behavioural divergence",
                    "### 4. Gap classes (hypotheses)", "### 5. Warm-start yield", "### 6. Repeat stability",
                    "persistence/recovery sample 2", "Holdout (segregated"):
        assert heading in report


def test_the_summary_names_gained_and_lost_tasks_up_to_ten(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    s, a, b = _exports(tmp_path)  # 2 lost, 16 gained
    assert main(["trajectories", str(a), str(b), "--out", str(tmp_path / "out")]) == 0
    lines = capsys.readouterr().out.splitlines()
    lost = [x for x in lines if x.strip().startswith("lost by B:")]
    assert lost == [f"  lost by B: {', '.join(s.names('regression'))}"]
    assert not any(x.strip().startswith("gained by B:") for x in lines)  # 16 > 10: counted only
    (tmp_path / "few").mkdir()
    s, a, b = _exports(tmp_path / "few", {"both_pass": 3, "regression": 1, "persistence": 10})
    assert main(["trajectories", str(a), str(b), "--out", str(tmp_path / "few" / "out")]) == 0
    out = capsys.readouterr().out
    gained = sorted(s.names("persistence"))
    assert f"gained by B: {', '.join(gained)}" in out and len(gained) == 10


def test_secrets_never_reach_outputs(tmp_path: Path) -> None:
    s = trajgen.scenario({"persistence": 3, "knowledge": 2})
    for rec in s.a:
        rec["messages"][-1]["content"] = f"my key is {SECRET} and password=hunter22"
        for m in rec["messages"]:
            if m["role"] == "tool":
                m["content"] = f"Error: bad token Bearer {SECRET}"
    inputs = tmp_path / "in"
    inputs.mkdir()
    a = trajgen.write_export(inputs / "a.json", s.a)
    b = trajgen.write_export(inputs / "b.json", s.b)
    out = tmp_path / "out"
    assert main(["trajectories", a, b, "--out", str(out), "--samples", "3"]) == 0
    blob = "".join(p.read_text() for p in out.iterdir())
    assert SECRET not in blob and "hunter22" not in blob
    assert "REDACTED" in (out / "report.md").read_text()


def test_default_out_dir_is_under_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, a, b = _exports(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert main(["trajectories", str(a), str(b)]) == 0
    assert main(["trajectories", str(a), str(b)]) == 0  # a second run in the same second gets its own folder
    made = sorted((work / ".understudy" / "trajectory-diffs").iterdir())
    assert len(made) == 2 and all((d / "report.md").is_file() for d in made)
    assert sorted(p.name for p in a.parent.iterdir()) == ["a.json", "b.jsonl"]


def test_json_format_repeats_and_baseline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    s, a, b = _exports(tmp_path, {"both_pass": 3, "persistence": 3})
    gap = s.names("persistence")
    b2 = trajgen.write_export(tmp_path / "b2.json", trajgen.flip(s.b, {gap[0]}))
    c = trajgen.write_export(tmp_path / "c.json", s.b)
    rc = main(["trajectories", str(a), str(b), c, "--repeats", f"B={b2}", "--baseline", "A",
               "--format", "json", "--out", str(tmp_path / "o")])
    assert rc == 0
    doc = json.loads(capsys.readouterr().out)
    assert [p["candidate"]["label"] for p in doc["pairs"]] == ["B", "C"]
    st = doc["pairs"][0]["stability"]
    assert st["counts"]["stochastic"] == 1 and st["stochastic_tasks"] == [gap[0]]
    assert doc["pairs"][1]["stability"]["tasks_with_repeats"] == 0
    assert os.path.isfile(doc["files"]["report.md"])


def _err(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize(
    ("case", "match"),
    [
        ("not_json", "is not valid JSON"),
        ("no_names", "no usable trajectory record"),
        ("missing", "no such trajectory export"),
        ("harness", "harness differs"),
        ("one_run", "at least two runs"),
        ("bad_repeats", "is not RUN=PATH"),
        ("bad_baseline", "--baseline 'Z' names no run"),
        ("bad_min_n", "--min-n must be at least 1"),
    ],
)
def test_user_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, match: str) -> None:
    s, a, b = _exports(tmp_path, {"both_pass": 3})
    other = tmp_path / "other.json"
    extra: list[str] = []
    runs = [str(a), str(other)]
    if case == "not_json":
        other.write_text("hello, world")
    elif case == "no_names":
        other.write_text(json.dumps([{"id": 1, "passed": True}]))
    elif case == "missing":
        runs = [str(a), str(tmp_path / "nope.json")]
    elif case == "harness":
        trajgen.write_export(other, s.b, meta={"harness": "another"})
    elif case == "one_run":
        runs = [str(a)]
    else:
        runs = [str(a), str(b)]
        extra = {"bad_repeats": ["--repeats", "B"], "bad_baseline": ["--baseline", "Z"],
                 "bad_min_n": ["--min-n", "0"]}[case]
    assert main(["trajectories", *runs, *extra, "--out", str(tmp_path / "o")]) == 2
    err = _err(capsys)
    assert match in err and err.startswith("rundiff: error:")
    assert not (tmp_path / "o").exists()


def test_refuses_to_write_into_an_input_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, a, b = _exports(tmp_path)
    folder = tmp_path / "single"
    folder.mkdir()
    (folder / "b.jsonl").write_bytes(b.read_bytes())
    rc = main(["trajectories", str(a), f"traj:{folder}", "--out", str(folder / "out")])
    assert rc == 2 and "refusing to write into input folder" in _err(capsys)
    assert [p.name for p in folder.iterdir()] == ["b.jsonl"]
