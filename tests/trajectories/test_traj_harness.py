"""Harness formats read natively: SWE-bench reports, mini-swe-agent, SWE-agent, OpenHands, lm-eval.

Real data: the SWE-bench harness summaries and report.json tree in ../shared/realdata, the
mini-swe-agent 1.15 run there, and lm-eval results files. Fixtures written once with the real
packages: tests/trajectories/fixtures/minisweagent (mini-swe-agent 2.4.6, make_fixtures.py) and
tests/trajectories/fixtures/swebench (swebench 5.0.2 report writer, make_reports.py).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from rundiff_adapters.trajectory import sniff_kind
from rundiff_adapters.trajectory.formats import read_trajectory_run
from rundiff_adapters.trajectory.shell import exit_bucket, shell_program

from rundiff_core.cli import main
from rundiff_core.errors import InputError
from rundiff_core.trajectories import diff_pair

FIX = Path(__file__).resolve().parent / "fixtures"
MSA = FIX / "minisweagent"
SWB = FIX / "swebench"
TDAD = "agent-swebench-tdad-qwen-mini/claudecode_n_codex_swebench/benchmark_runs"
TDAD_1 = f"{TDAD}/20260218_174616_current_vanilla_10_step30_compile_submit_stop/evaluations/vanilla.eval.json"
TDAD_2 = f"{TDAD}/20260218_190623_current_vanilla_10_step30_compile_submit_stop_linecap200/evaluations/vanilla.eval.json"
GEMINI = "agent-swebench-minisweagent-gemini3pro/swebench_results/20251118_gemini-3-pro-74pct"
LMEVAL = "lmeval-saucam-llama3/meta-llama"


@pytest.fixture
def swbdata(trajdata: Path) -> Path:
    if not (trajdata / TDAD).is_dir() or not (trajdata / GEMINI).is_dir():
        pytest.skip("SWE-bench real data not found")
    return trajdata


def _digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(folder)).encode() + p.read_bytes())
    return h.hexdigest()


# -- exit statuses and shell programs ----------------------------------------------------------------


@pytest.mark.parametrize(("raw", "bucket"), [
    ("Submitted", "completed"), ("LimitsExceeded", "max_steps"), ("TimeoutExpired", "max_steps"),
    ("TimeExceeded", "max_steps"), ("RuntimeError", "error"), ("FormatError", "error"),
    ("RepeatedFormatError", "error"), ("submitted (exit_cost)", "max_steps"), ("submitted", "completed"),
    ("exit_context", "max_steps"), ("exit_forfeit", "gave_up"), ("exit_format", "error"),
    ("exit_environment_error", "error"), ("Whatever", "unknown"), (None, "unknown")])
def test_exit_statuses_map_to_buckets(raw: str | None, bucket: str) -> None:
    assert exit_bucket(raw) == bucket


def test_shell_program() -> None:
    assert shell_program("cd /testbed && python -m pytest -x tests/") == "pytest"
    assert shell_program("FOO=1 sed -i 's/a/b/' f.py") == "sed"
    assert shell_program("# look\nls -la") == "ls"
    assert shell_program("") is None


# -- SWE-bench reports ---------------------------------------------------------------------------------


def test_two_real_swebench_reports_give_named_gained_and_lost(swbdata: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    a, b = swbdata / TDAD_1, swbdata / TDAD_2
    assert sniff_kind(str(a)) == "swebench"
    raw_a, raw_b = json.loads(a.read_text()), json.loads(b.read_text())
    rc = main(["trajectories", str(a), str(b), "--out", str(tmp_path / "o"), "--format", "json"])
    assert rc == 0
    pair = json.loads(capsys.readouterr().out)["pairs"][0]
    m = pair["matrix"]["train"]
    res_a, res_b = set(raw_a["resolved_ids"]), set(raw_b["resolved_ids"])
    assert m["reachable_gap"]["tasks"] == sorted(res_b - res_a) == ["astropy__astropy-13236", "astropy__astropy-13453"]
    assert m["regression"]["tasks"] == sorted(res_a - res_b) == ["astropy__astropy-12907"]
    assert m["both_pass"]["tasks"] == ["astropy__astropy-14309"]
    sig = pair["significance"]["train"]
    assert (sig["gained"], sig["lost"], sig["p"]) == (2, 1, 1.0) and sig["n"] == 10
    # empty patches (run 2) count as unresolved, as SWE-bench scores them; nothing is "incomplete" here
    run_b = read_trajectory_run(str(b))
    assert {n for n, r in run_b.records.items() if r.finish_raw == "empty_patch"} == set(raw_b["empty_patch_ids"])
    assert all(not run_b.records[n].passed for n in raw_b["empty_patch_ids"])
    assert len(run_b.records) == len(raw_b["submitted_ids"])
    assert any("490 instance(s) never submitted" in n for n in run_b.notes)


def test_real_report_tree_is_a_run_and_matches_the_summary(swbdata: Path) -> None:
    logs = swbdata / GEMINI / "logs"
    assert sniff_kind(str(logs)) == "swebench"
    run = read_trajectory_run(str(logs))
    summary = json.loads((swbdata / GEMINI / "results_summary.json").read_text())
    truth = {i["instance_id"]: i["resolved"] for i in summary["instances"] if i["instance_id"] in run.records}
    assert len(truth) == 10 and {n: r.passed for n, r in run.records.items()} == truth
    assert sorted(n for n, r in run.records.items() if r.passed) == [
        f"astropy__astropy-{n}" for n in (12907, 13236, 13453, 13579, 14096, 14309)]
    tdad = read_trajectory_run(str(swbdata / TDAD_1))
    tdad.label, run.label = "A", "B"
    m = diff_pair(tdad, run).summary["matrix"]["train"]
    assert m["reachable_gap"]["count"] == 4 and m["regression"]["count"] == 0


def test_real_minisweagent_folder_lists_trajectories_joined_with_the_tree(
        swbdata: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = swbdata / GEMINI
    before = _digest(folder)
    assert sniff_kind(str(folder)) == "minisweagent"
    assert main(["ls", f"traj:{folder}", "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    assert _digest(folder) == before  # read-only
    trajs = {t["task"]: t for t in row["trajectories"]}
    files = sorted(p.name[: -len(".traj.json")] for p in (folder / "trajs").rglob("*.traj.json"))
    assert sorted(trajs) == files
    for name, t in trajs.items():
        raw = json.loads((folder / "trajs" / name / f"{name}.traj.json").read_text())
        assert t["exit_status"] == raw["info"]["exit_status"] == "Submitted" and t["finish"] == "completed"
        assert t["steps"] == raw["info"]["model_stats"]["api_calls"]
        assert t["passed"] == json.loads((folder / "logs" / name / "report.json").read_text())["resolved"]
    assert row["exit_statuses"] == {"Submitted": 5} and row["model" if "model" in row else "name"]
    assert any("outcomes joined from" in n and "found beside the folder" in n for n in row["fidelity"])
    run = read_trajectory_run(str(folder))
    assert run.model == "google/gemini-3-pro-preview" and run.meta["trajectory_format"] == "mini-swe-agent-1"
    # the "EXACTLY ONE action" replies are format errors: one invalid call each
    fmt_errors = sum(1 for m in json.loads((folder / "trajs/astropy__astropy-13033/astropy__astropy-13033.traj.json")
                                          .read_text())["messages"]
                     if m["role"] == "user" and "EXACTLY ONE action" in m["content"])
    assert fmt_errors and run.records["astropy__astropy-13033"].features.invalid_calls == fmt_errors
    assert main(["ls", f"traj:{folder}"]) == 0
    text = capsys.readouterr().out
    assert "astropy__astropy-12907: Submitted → completed, resolved" in text


# -- fixtures written by the real packages ----------------------------------------------------------------


def test_minisweagent_fixture_exit_statuses_and_signals() -> None:
    a = read_trajectory_run(str(MSA / "run_a"))
    b = read_trajectory_run(str(MSA / "run_b"))
    assert (MSA / "VERSION").read_text().startswith("mini-swe-agent 2.4.6")
    assert a.meta["trajectory_format"] == "mini-swe-agent-1.1" and a.model == "deterministic-run_a"
    assert {n: (r.finish_raw, r.finish) for n, r in a.records.items()} == {
        "demo__calc-101": ("Submitted", "completed"), "demo__calc-102": ("LimitsExceeded", "max_steps"),
        "demo__strings-201": ("Submitted", "completed"), "demo__strings-202": ("RuntimeError", "error")}
    assert a.records["demo__strings-201"].features.invalid_calls == 1  # the FormatError turn
    rec = b.records["demo__calc-102"].features  # import fails (exit 1), a later python call succeeds
    assert (rec.errors, rec.retried, rec.recovered) == (1, 1, 1)
    assert "$ python" in rec.endpoints
    assert all(r.passed is None for r in a.records.values())
    assert any("no SWE-bench report joined" in n for n in a.notes)


def test_minisweagent_joined_with_real_swebench_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ra, rb = SWB / "deterministic-run_a.run_a.json", SWB / "deterministic-run_b.run_b.json"
    rc = main(["trajectories", f"{MSA / 'run_a'}#report={ra}", f"traj:{MSA / 'run_b'}#report={rb}",
               "--out", str(tmp_path / "o"), "--format", "json"])
    assert rc == 0
    pair = json.loads(capsys.readouterr().out)["pairs"][0]
    m = pair["matrix"]["train"]
    assert m["reachable_gap"]["tasks"] == ["demo__calc-102"] and m["regression"]["tasks"] == []
    assert m["both_pass"]["tasks"] == ["demo__calc-101"] and m["both_fail"]["tasks"] == ["demo__strings-202"]
    assert pair["alignment"]["unmatched"] == [{"task": "demo__strings-201", "why": "B: crash"}]  # harness error
    assert pair["gap_classes"]["n"] == 1 and pair["significance"]["train"]["gained"] == 1
    # the report tree of the same run gives the same outcomes for the instances it graded
    tree = read_trajectory_run(str(MSA / "run_a"), None,
                               str(SWB / "logs/run_evaluation/run_a/deterministic-run_a"))
    assert {n: r.passed for n, r in tree.records.items()} == {
        "demo__calc-101": True, "demo__calc-102": None, "demo__strings-201": False, "demo__strings-202": None}


def test_auto_join_takes_the_one_report_beside_and_refuses_two(tmp_path: Path) -> None:
    shutil.copytree(MSA / "run_a", tmp_path / "run_a")
    shutil.copy(SWB / "deterministic-run_a.run_a.json", tmp_path)
    run = read_trajectory_run(str(tmp_path / "run_a"))
    assert run.records["demo__calc-101"].passed is True and run.records["demo__strings-201"].passed is False
    assert any("found beside the folder" in n for n in run.notes)
    shutil.copy(SWB / "deterministic-run_b.run_b.json", tmp_path)
    run = read_trajectory_run(str(tmp_path / "run_a"))
    assert all(r.passed is None for r in run.records.values())
    assert any("2 SWE-bench reports found" in n and "#report=PATH" in n for n in run.notes)


def test_ids_kept_as_spelled_and_disagreements_reported(tmp_path: Path) -> None:
    run_dir = tmp_path / "run_a"
    shutil.copytree(MSA / "run_a", run_dir)
    preds = json.loads((run_dir / "preds.json").read_text())
    preds["Demo__calc-101 "] = preds.pop("demo__calc-101")  # a real-world typo: case and a trailing space
    (run_dir / "preds.json").write_text(json.dumps(preds))
    traj = run_dir / "demo__calc-102" / "demo__calc-102.traj.json"
    data = json.loads(traj.read_text())
    data["instance_id"] = "demo__calc-102b"
    traj.write_text(json.dumps(data))
    report = json.loads((SWB / "deterministic-run_a.run_a.json").read_text())
    report["resolved_ids"] = ["DEMO__CALC-101"]
    (tmp_path / "r.json").write_text(json.dumps(report))
    run = read_trajectory_run(str(run_dir), None, str(tmp_path / "r.json"))
    assert "Demo__calc-101 " in run.records and "demo__calc-101" in run.records  # both kept, as spelled
    assert "demo__calc-102b" in run.records and "demo__calc-102" not in run.records  # one attempt, one task
    notes = " | ".join(run.notes)
    assert "trajectory files and preds.json disagree on 1 id(s)" in notes and "'Demo__calc-101 '" in notes
    assert "holds instance_id 'demo__calc-102b'" in notes
    assert "trajectories and report disagree" in notes and "'DEMO__CALC-101'" in notes
    assert run.records["demo__calc-101"].passed is None  # a near-miss is never joined


def test_hostile_side_files_are_counted_not_fatal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(MSA / "run_a", run_dir)
    (run_dir / "exit_statuses_1800000000.0.yaml").write_text("instances_by_exit_status: [unclosed\n  - : :")
    (run_dir / "exit_statuses_1900000000.0.yaml").write_text(
        "!!python/object/apply:os.system\nargs: ['echo pwned']\n")
    bad = run_dir / "demo__calc-101" / "demo__calc-101.traj.json"
    bad.write_text('{"info": {"exit_status": "Subm')
    run = read_trajectory_run(str(run_dir))
    assert run.skipped["unreadable exit-status YAML"] == 1
    assert run.skipped["exit-status YAML without instances_by_exit_status"] == 1
    assert run.skipped["unreadable trajectory"] == 1
    assert "demo__calc-101" in run.records and run.records["demo__calc-101"].features.calls == []
    rc = main(["trajectories", f"{run_dir}#report={tmp_path / 'missing.json'}", str(MSA / "run_b")])
    err = capsys.readouterr().err
    assert rc == 2 and "no such file or folder" in err and "Traceback" not in err and len(err.strip().splitlines()) <= 2
    with pytest.raises(InputError, match="does not apply"):
        read_trajectory_run(str(run_dir), ("trial", 1))


# -- SWE-agent .traj, written in the published layout ---------------------------------------------------


def _sweagent_traj(exit_status: str, steps: list[tuple[str, str]]) -> dict:
    """A SWE-agent .traj: `trajectory[]` (action/observation/thought/response), `history[]`, `info`."""
    return {
        "environment": "swe_main",
        "trajectory": [{"action": a, "observation": o, "response": f"DISCUSSION\n{a}", "thought": "next",
                        "state": "{}", "execution_time": 0.1} for a, o in steps],
        "history": [{"role": "system", "content": "You are an autonomous programmer", "agent": "primary"}],
        "info": {"exit_status": exit_status, "submission": "diff --git a/x b/x",
                 "model_stats": {"instance_cost": 0.5, "tokens_sent": 1200, "tokens_received": 80, "api_calls": len(steps)},
                 "swe_agent_version": "1.0.1"},
        "replay_config": json.dumps({"agent": {"model": {"name": "gpt-4o"}}}),
    }


def test_sweagent_traj_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = tmp_path / "sweagent_run"
    for iid, status, steps in (
            ("django__django-1", "submitted", [("find_file models.py", "Found 1 matches"),
                                               ("python reproduce.py", "Traceback (most recent call last):\n  boom"),
                                               ("python reproduce.py", "ok"), ("submit", "")]),
            ("django__django-2", "submitted (exit_cost)", [("ls", "a b"), ("open a.py", "[File: a.py]")]),
            ("sympy__sympy-3", "exit_forfeit", [("ls", "x")])):
        (run_dir / iid).mkdir(parents=True)
        (run_dir / iid / f"{iid}.traj").write_text(json.dumps(_sweagent_traj(status, steps)))
    assert sniff_kind(str(run_dir)) == "sweagent"
    run = read_trajectory_run(str(run_dir))
    assert run.model == "gpt-4o" and run.format == "sweagent"
    assert {n: r.finish for n, r in run.records.items()} == {
        "django__django-1": "completed", "django__django-2": "max_steps", "sympy__sympy-3": "gave_up"}
    f = run.records["django__django-1"].features
    assert len(f.calls) == 4 and (f.errors, f.recovered) == (1, 1) and "$ python" in f.endpoints
    assert run.records["django__django-1"].input_tokens == 1200
    assert main(["ls", f"traj:{run_dir}"]) == 0
    assert "django__django-2: submitted (exit_cost) → max_steps" in capsys.readouterr().out


# -- OpenHands output.jsonl (EvalOutput per line, v0 event history) -------------------------------------


def _oh_line(iid: str, resolved: bool | None, exit_codes: list[int], finish: bool, error: str | None = None) -> dict:
    history: list[dict] = [{"id": 0, "source": "user", "action": "message", "args": {"content": "Fix it"}}]
    for i, code in enumerate(exit_codes):
        history.append({"id": 2 * i + 1, "source": "agent", "action": "run",
                        "args": {"command": f"python -m pytest t{i}.py", "thought": "test"}})
        history.append({"id": 2 * i + 2, "source": "agent", "observation": "run", "cause": 2 * i + 1,
                        "content": "ok" if code == 0 else "1 failed", "extras": {"metadata": {"exit_code": code}}})
    if finish:
        history.append({"id": 99, "source": "agent", "action": "finish", "args": {"outputs": {}}})
    out = {"instance_id": iid, "instruction": "Fix it", "history": history,
           "metadata": {"agent_class": "CodeActAgent", "llm_config": {"model": "claude-x"}, "max_iterations": 30,
                        "dataset": "princeton-nlp/SWE-bench_Verified"},
           "metrics": {"accumulated_cost": 0.25}, "error": error, "test_result": {"git_patch": "diff"}}
    if resolved is not None:
        out["test_result"]["report"] = {"empty_generation": False, "resolved": resolved}
    return out


def test_openhands_output_jsonl(tmp_path: Path) -> None:
    a, b = tmp_path / "a" / "output.jsonl", tmp_path / "b" / "output.jsonl"
    for path, lines in ((a, [_oh_line("x__y-1", False, [1], True), _oh_line("x__y-2", True, [0], True),
                             _oh_line("x__y-3", False, [1, 1], False, "RuntimeError: Agent reached maximum iteration")]),
                        (b, [_oh_line("x__y-1", True, [1, 0], True), _oh_line("x__y-2", True, [0], True),
                             _oh_line("x__y-3", None, [0], False, "AgentStuckInLoopError")])):
        path.parent.mkdir()
        path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    assert sniff_kind(str(a)) == "openhands"
    ra, rb = read_trajectory_run(str(a)), read_trajectory_run(str(b))
    assert ra.model == "claude-x" and ra.task_set == "princeton-nlp/SWE-bench_Verified"
    assert {n: r.finish for n, r in ra.records.items()} == {"x__y-1": "completed", "x__y-2": "completed",
                                                           "x__y-3": "max_steps"}
    assert rb.records["x__y-3"].status == "crash" and rb.records["x__y-1"].features.recovered == 1
    ra.label, rb.label = "A", "B"
    p = diff_pair(ra, rb)
    assert p.summary["matrix"]["train"]["reachable_gap"]["tasks"] == ["x__y-1"]
    assert p.summary["alignment"]["unmatched"] == [{"task": "x__y-3", "why": "B: crash"}]


# -- lm-evaluation-harness --------------------------------------------------------------------------------


def _samples(task: str, outcomes: dict[int, float], filters: tuple[str, ...], metric: str) -> str:
    """samples_<task>_<date>.jsonl lines as lm-eval's evaluator writes them (one line per doc and filter)."""
    lines = []
    for doc_id, value in outcomes.items():
        for k, filt in enumerate(filters):
            lines.append({"doc_id": doc_id, "doc": {"question": f"q{doc_id}"}, "target": "4",
                          "arguments": {"gen_args_0": {"arg_0": "Q: 2+2?", "arg_1": {"until": ["\n"]}}},
                          "resps": [["4"]], "filtered_resps": ["4"], "filter": filt, "metrics": [metric],
                          "doc_hash": "d", "prompt_hash": "p", "target_hash": "t", metric: value if k == 0 else 1.0})
    return "\n".join(json.dumps(x) for x in lines) + "\n"


def test_lmeval_samples_with_real_results_metadata(trajdata: Path, tmp_path: Path) -> None:
    src = trajdata / LMEVAL
    if not src.is_dir():
        pytest.skip("lm-eval real data not found")
    runs = {}
    for model, outcomes in (("Meta-Llama-3-8B", {0: 0.0, 1: 1.0, 2: 0.0, 3: 0.0}),
                            ("Meta-Llama-3-8B-Instruct", {0: 1.0, 1: 1.0, 2: 1.0, 3: 0.0})):
        folder = tmp_path / model
        folder.mkdir()
        date = "2024-05-01T10-00-00.000000"
        shutil.copy(src / model / "openllm" / "gsm8k.json", folder / f"results_{date}.json")
        (folder / f"samples_gsm8k_{date}.jsonl").write_text(
            _samples("gsm8k", outcomes, ("strict-match", "flexible-extract"), "exact_match"))
        assert sniff_kind(str(folder)) == "lmeval"
        runs[model] = read_trajectory_run(str(folder))
    base = runs["Meta-Llama-3-8B"]
    real = json.loads((src / "Meta-Llama-3-8B/openllm/gsm8k.json").read_text())
    assert base.meta["n_shot:gsm8k"] == real["n-shot"]["gsm8k"] == 5
    assert base.meta["metric:gsm8k"] == "exact_match,strict-match"
    assert sorted(base.records) == ["gsm8k/0", "gsm8k/1", "gsm8k/2", "gsm8k/3"]
    assert base.skipped["sample of another filter"] == 4  # flexible-extract lines are not outcomes
    assert base.model == "meta-llama/Meta-Llama-3-8B"  # from the results file's config.model_args
    assert all(r.cluster == "gsm8k" for r in base.records.values())
    a, b = base, runs["Meta-Llama-3-8B-Instruct"]
    a.label, b.label = "A", "B"
    m = diff_pair(a, b).summary["matrix"]["train"]
    assert m["reachable_gap"]["tasks"] == ["gsm8k/0", "gsm8k/2"]


def test_lmeval_results_alone_is_a_clear_error(trajdata: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = trajdata / LMEVAL / "Meta-Llama-3-8B/openllm/arc.json"
    if not path.is_file():
        pytest.skip("lm-eval real data not found")
    assert sniff_kind(str(path)) == "lmeval"
    rc = main(["trajectories", str(path), str(path)])
    err = capsys.readouterr().err
    assert rc == 2 and "no samples_*.jsonl beside it" in err and "--log_samples" in err and "Traceback" not in err


def test_a_tool_report_json_tree_is_not_a_harness_tree(swbdata: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = swbdata / TDAD  # <run>/report.json here is the tool's own summary (resolved: null), not a grading
    assert sniff_kind(str(runs)) is None
    assert main(["ls", f"traj:{runs / '20260218_174616_current_vanilla_10_step30_compile_submit_stop' / 'evaluations'}",
                 "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["passed"] == 2


def test_oversized_side_files_are_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rundiff_adapters.trajectory import swebench

    run_dir = tmp_path / "run"
    shutil.copytree(MSA / "run_b", run_dir)
    monkeypatch.setattr(swebench, "MAX_SIDE_FILE", 50)
    run = read_trajectory_run(str(run_dir))
    assert run.skipped["unreadable exit-status YAML"] == 1
    assert any("larger than 50 bytes" in n for n in run.notes)
    assert {r.finish_raw for r in run.records.values()} == {"Submitted", "LimitsExceeded"}  # from the trajectories


def test_one_minisweagent_trajectory_file(tmp_path: Path) -> None:
    path = MSA / "run_b" / "demo__calc-102" / "demo__calc-102.traj.json"
    assert sniff_kind(str(path)) == "minisweagent"
    run = read_trajectory_run(str(path))
    assert list(run.records) == ["demo__calc-102"] and run.records["demo__calc-102"].finish == "completed"
    joined = read_trajectory_run(str(path), None, str(SWB / "deterministic-run_b.run_b.json"))
    assert joined.records["demo__calc-102"].passed is True
    bad = tmp_path / "x.traj.json"
    bad.write_text("{not json")
    with pytest.raises(InputError, match="cannot read"):
        read_trajectory_run(str(bad))


def test_lmeval_sample_count_and_lower_is_better(tmp_path: Path) -> None:
    date = "2025-01-02T03-04-05.678901"
    results = {"results": {"toy": {"alias": "toy", "err,none": 0.5, "err_stderr,none": 0.1}},
               "configs": {"toy": {"task": "toy", "metric_list": [{"metric": "err", "higher_is_better": False}],
                                   "num_fewshot": 0}},
               "n-shot": {"toy": 0}, "n-samples": {"toy": {"original": 10, "effective": 10}},
               "versions": {"toy": 1.0}, "model_name": "toy-model"}
    (tmp_path / f"results_{date}.json").write_text(json.dumps(results))
    (tmp_path / f"samples_toy_{date}.jsonl").write_text(_samples("toy", {0: 0.0, 7: 1.0}, ("none",), "err"))
    run = read_trajectory_run(str(tmp_path / f"results_{date}.json"))
    assert {n: r.passed for n, r in run.records.items()} == {"toy/0": True, "toy/7": False}  # err 0 is a pass
    assert any("counts 10 samples, the samples file holds 2" in n for n in run.notes) and run.model == "toy-model"
