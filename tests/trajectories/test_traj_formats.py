"""Importers: native JSON / JSON object / JSONL, bad input, repeats, selectors, Inspect fallback."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import trajgen
from rundiff_adapters.trajectory import sniff_kind
from rundiff_adapters.trajectory.formats import read_trajectory_run, split_selector

from rundiff_core.errors import InputError, MissingDependencyError


@pytest.mark.parametrize("style", ["object", "list", "jsonl"])
def test_native_styles_load_the_same_records(tmp_path: Path, style: str) -> None:
    s = trajgen.scenario({"both_pass": 2, "persistence": 2, "a_crash": 1})
    ext = "jsonl" if style == "jsonl" else "json"
    path = trajgen.write_export(tmp_path / f"a.{ext}", s.a, style=style)
    run = read_trajectory_run(path)
    assert sorted(run.records) == sorted(r["name"] for r in s.a)
    assert sniff_kind(path) == "traj"
    crash = run.records["a_crash-000"]
    assert crash.passed is None and crash.status == "crash"
    p = run.records["persistence-000"]
    assert p.passed is False and p.finish == "gave_up" and p.features.quit == 1 and p.steps == 2
    if style != "list":
        assert run.model == "model-x" and run.harness == "toy-harness" and run.tool_access == "full"
        assert run.tool_names == {"search", "http_get", "submit"}
    else:
        assert run.harness is None and run.tool_names is None


def test_record_without_name_is_a_counted_skip(tmp_path: Path) -> None:
    recs = [trajgen.record("t1", True, []), {"id": 3, "passed": True, "messages": []}, "junk"]
    path = trajgen.write_export(tmp_path / "a.json", recs)
    run = read_trajectory_run(path)
    assert list(run.records) == ["t1"]
    assert run.skipped == {"record without `name`": 1, "record that is not a JSON object": 1}
    assert any("without `name`" in n for n in run.notes)


def test_no_usable_record_is_an_input_error(tmp_path: Path) -> None:
    path = trajgen.write_export(tmp_path / "a.json", [{"id": 0, "passed": True}])
    with pytest.raises(InputError, match="no usable trajectory record.*without `name`"):
        read_trajectory_run(path)


def test_malformed_messages_are_counted(tmp_path: Path) -> None:
    rec = trajgen.record("t1", True, [("search", {"q": "x"}, "ok")])
    rec["messages"] += [7, {"role": "assistant", "tool_calls": {"bad": 1}}]
    rec2 = trajgen.record("t2", False, [])
    rec2["messages"] = "not a list"
    run = read_trajectory_run(trajgen.write_export(tmp_path / "a.json", [rec, rec2]))
    assert run.skipped["malformed message"] == 3
    assert run.records["t1"].passed is True and run.records["t2"].passed is False


@pytest.mark.parametrize(
    ("content", "match"),
    [(b"this is not json", "not valid JSON"), (b"", "empty"), (b'{"a": 1}', "without a `records` list"),
     (b'"just a string"', "not a list of records"), (b'[{"name": "x", "passed": tr', "not valid JSON"),
     (b"\xff\xfe\x00garbage", "not UTF-8|not valid JSON")],
)
def test_bad_json_files(tmp_path: Path, content: bytes, match: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(InputError, match=match):
        read_trajectory_run(str(path))


def test_jsonl_truncated_last_line_and_corrupt_line(tmp_path: Path) -> None:
    lines = [json.dumps(trajgen.record(f"t{i}", i % 2 == 0, [])) for i in range(4)]
    lines[1] = "{corrupt"
    raw = "\n".join(lines) + "\n" + json.dumps(trajgen.record("t9", True, []))[:40]  # torn tail
    path = tmp_path / "a.jsonl"
    path.write_text(raw)
    run = read_trajectory_run(str(path))
    assert sorted(run.records) == ["t0", "t2", "t3"]
    assert run.skipped == {"corrupt JSONL line": 1, "truncated last JSONL line": 1}
    assert any("cut short" in n for n in run.notes)


def test_all_lines_corrupt_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text("{x\n{y\n")
    with pytest.raises(InputError, match="no readable JSON line"):
        read_trajectory_run(str(path))


def test_repeats_by_index_and_duplicates(tmp_path: Path) -> None:
    recs = [trajgen.record("t1", False, [], extra={"trial": 2}), trajgen.record("t1", True, [], extra={"trial": 0}),
            trajgen.record("t1", True, [], extra={"trial": 1}), trajgen.record("t2", True, []),
            trajgen.record("t2", False, [])]
    path = trajgen.write_export(tmp_path / "a.json", recs)
    run = read_trajectory_run(path)
    assert run.records["t1"].repeat == 0 and run.records["t1"].passed is True
    assert sorted(r.repeat for r in run.repeats["t1"]) == [1, 2]
    assert len(run.repeats["t2"]) == 1 and any("treated as repeats" in n for n in run.notes)
    one = read_trajectory_run(path, ("trial", 2))
    assert list(one.records) == ["t1"] and one.records["t1"].passed is False and not one.repeats
    with pytest.raises(InputError, match="no records with trial=7"):
        read_trajectory_run(path, ("trial", 7))


def test_holdout_flags(tmp_path: Path) -> None:
    recs = [trajgen.record("a", True, [], extra={"holdout": True}), trajgen.record("b", True, [], extra={"frozen": "yes"}),
            trajgen.record("c", True, [], extra={"split": "holdout"}), trajgen.record("d", True, [], extra={"split": "train"})]
    run = read_trajectory_run(trajgen.write_export(tmp_path / "a.json", recs))
    assert [n for n, r in run.records.items() if r.holdout] == ["a", "b", "c"]


def test_passed_derivation_order(tmp_path: Path) -> None:
    recs = [{"name": "p", "passed": False, "score": 1.0}, {"name": "ar", "assertion_results": [{"passed": True}, {"ok": False}]},
            {"name": "s", "score": 0.9999999}, {"name": "none", "messages": []}]
    run = read_trajectory_run(trajgen.write_export(tmp_path / "a.json", recs, style="list"))
    assert {n: r.passed for n, r in run.records.items()} == {"p": False, "ar": False, "s": True, "none": None}
    assert run.records["none"].status == "unscored"
    assert run.records["s"].steps_source == "counted"


def test_split_selector() -> None:
    assert split_selector("a/b.json#trial=2") == ("a/b.json", ("trial", 2))
    assert split_selector("a/b#c.json") == ("a/b#c.json", None)


def _inspect_json_log(path: Path, version: int) -> str:
    log = {"version": version, "status": "success",
           "eval": {"task": "toy", "model": "m", "dataset": {"sample_ids": [1, 2]}, "scorers": [{"name": "match"}]},
           "samples": [
               {"id": 1, "epoch": 1, "scores": {"match": {"value": "C"}}, "output": {"choices": [{"stop_reason": "stop"}]},
                "messages": [{"role": "user", "content": "attachment://abc"},
                             {"role": "assistant", "content": "", "tool_calls": [
                                 {"id": "c1", "function": "bash", "arguments": {"cmd": "ls"}, "parse_error": None}]},
                             {"role": "tool", "tool_call_id": "c1", "content": "", "error": {"type": "timeout", "message": "t"}},
                             {"role": "assistant", "content": "done"}],
                "attachments": {"abc": "the real prompt"}},
               {"id": 2, "epoch": 1, "scores": {}, "error": {"message": "boom"}, "messages": []},
           ]}
    path.write_text(json.dumps(log))
    return str(path)


def test_inspect_direct_reader_without_inspect_ai(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "inspect_ai", None)
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)
    run = read_trajectory_run(_inspect_json_log(tmp_path / "log.json", 2))
    assert any("without inspect_ai" in n for n in run.notes)
    one, two = run.records["1"], run.records["2"]
    assert one.passed is True and one.finish == "completed" and one.features.errors == 1
    assert two.passed is None and two.status == "crash"


def test_inspect_unknown_version_needs_inspect_ai(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "inspect_ai", None)
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)
    with pytest.raises(MissingDependencyError) as info:
        read_trajectory_run(_inspect_json_log(tmp_path / "log.json", 99))
    assert "rundiff[inspect]" in (info.value.hint or "")


def test_inspect_broken_eval_zip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "inspect_ai", None)
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)
    path = tmp_path / "x.eval"
    path.write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(InputError, match="not a readable Inspect .eval archive"):
        read_trajectory_run(str(path))
