"""local: lm-evaluation-harness results as it writes them today (`<output_path>/<model>/results_<ISO
timestamp>.json`, lm-eval 0.4.5 and 0.4.9: tests/fixtures/realworld/lmeval/<source>/, each with
PROVENANCE.md and a stdlib-computed expected.json) and the older renamed `<task>.json` files
(../shared/realdata/lmeval-saucam-llama3). Every figure asserted comes from those files."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from rundiff_core import LayoutFolder, layouts_in_order
from rundiff_core.cli import main
from rundiff_core.resolve import open_source
from rundiff_core.testing import LayoutContract, WrittenLayout, hash_tree

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "realworld" / "lmeval"
ARAAG = REAL / "araag2-medical-0shot"
ARAAG_MODELS = ARAAG / "outputs" / "post_revamp_bench_26" / "single-turn" / "0-shot"
ALLEN = REAL / "allenlee37-kt-harness"
ALLEN_MODELS = ALLEN / "output"
GOAL_SOURCE = "lm-eval higher_is_better"


def _expected(source: Path) -> dict:
    return json.loads((source / "expected.json").read_text())


def _newest_per_model(source: Path, under: Path) -> dict[str, dict[str, tuple[float, dict]]]:
    """Per model folder, per task: (date, file entry) of the newest file scoring it — the
    layout's documented rule, applied to expected.json's own figures."""
    out: dict[str, dict[str, tuple[float, dict]]] = {}
    for rel, info in _expected(source)["files"].items():
        model = os.path.relpath(os.path.dirname(source / rel), under)
        tasks = out.setdefault(model, {})
        for task, entry in {**info["groups"], **info["results"]}.items():
            if not any(isinstance(v, float | int) for v in entry.values()):
                continue  # a group entry without scores (`" ": " "`)
            if task not in tasks or info["date"] > tasks[task][0]:
                tasks[task] = (info["date"], info)
    return out


def _parse_model_args(text: str) -> dict:
    """`k=v,k=v` as lm-eval's simple_parse_args_string writes it (typed like handle_arg_string)."""
    out = {}
    for part in text.split(","):
        k, _, v = part.partition("=")
        out[k] = {"True": True, "False": False}.get(v, v)
        for cast in (int, float):
            try:
                out[k] = cast(v)
                break
            except ValueError:
                continue
    return out


def _written(source: Path, under: Path) -> WrittenLayout:
    runs: dict[str, dict] = {}
    for model, tasks in _newest_per_model(source, under).items():
        want: dict = {"points": {}, "last": {}, "config": {}, "goals": {}}
        for task, (_date, info) in tasks.items():
            entry = {**info["groups"].get(task, {}), **info["results"][task]} \
                if task in info["results"] else info["groups"][task]
            for metric, v in entry.items():
                if metric == "alias" or not isinstance(v, float | int):
                    continue
                key = f"{task}/{metric}"
                want["points"][key] = 1  # one point per score, at step 0
                want["last"][key] = v
                hib = info["higher_is_better"].get(task, {}).get(metric.split(",")[0])
                if hib is not None:
                    want["goals"][key] = "max" if hib else "min"
            nshot = info["n-shot"].get(task)
            if nshot is not None:
                want["config"][f"tasks.{task}.num_fewshot"] = nshot
        newest = max((t for t in tasks.values()), key=lambda t: t[0])[1]
        want["config"]["model"] = newest["config"]["model"]
        for k, v in _parse_model_args(newest["config"]["model_args"]).items():
            want["config"][f"model_args.{k}"] = v
        want["config"]["git_hash"] = newest["git_hash"]
        runs[model] = want
    return WrittenLayout(str(under), "lm-eval", runs)


SOURCES = {"lm-eval-0.4.9-araag2": (ARAAG, ARAAG_MODELS),
           "lm-eval-0.4.5-allenlee37": (ALLEN, ALLEN_MODELS)}


class TestLmEvalContract(LayoutContract):
    layout = "lm-eval"

    @pytest.fixture(params=sorted(SOURCES))
    def written_layout(self, request) -> WrittenLayout:
        return _written(*SOURCES[request.param])


def _runs(path: Path) -> dict:
    src = open_source(f"local:{path}")
    return {os.path.relpath(r.address.split(":", 1)[1], str(path)): src.load_run(r)
            for r in src.list_runs()}


# -- what one model folder reads as -----------------------------------------------------------------


def test_a_scored_group_counts_once_stderr_is_summary_and_na_is_counted():
    exp = _expected(ARAAG)
    rel = next(r for r in exp["files"] if "UbiquantAI_Fleming-R1-7B" in r)
    info = exp["files"][rel]
    run = _runs(ARAAG_MODELS)["UbiquantAI_Fleming-R1-7B"]
    # NLI4PR_0-shot is in `results` and in `groups` (same values): one series each
    assert run.point_count("NLI4PR_0-shot/acc,none") == 1
    assert run.last_value("NLI4PR_0-shot/acc,none") == pytest.approx(info["groups"]["NLI4PR_0-shot"]["acc,none"])
    assert run.last_value("MedQA_0-shot/acc,none") == pytest.approx(0.6355066771406127)
    keys = run.metric_keys()
    assert len(keys) == sum(len([k for k in e if k != "alias"]) for e in info["results"].values())
    assert not any("_stderr" in k for k in keys)  # a stderr is not a metric …
    raw = json.loads((ARAAG / rel).read_text())
    stderr = raw["results"]["MedQA_0-shot"]["acc_stderr,none"]
    assert run.summary["MedQA_0-shot/acc_stderr,none"] == stderr  # … it is kept in the summary
    assert run.meta["stderr"]["MedQA_0-shot/acc,none"] == stderr
    assert "MedNLI_0-shot/f1_stderr,none" not in run.summary  # the string "N/A"
    # `f1_stderr,none` is "N/A" in the 5 results entries (and the groups copy, not read twice)
    assert any('5 "N/A" value(s) skipped' in n for n in run.fidelity)
    assert run.status == "finished"


def test_the_model_comes_from_the_file_not_the_folder_name():
    runs = _runs(ARAAG_MODELS)
    exp = _expected(ARAAG)
    for rel, info in exp["files"].items():
        folder = os.path.basename(os.path.dirname(rel))
        run = runs[folder]
        assert run.meta["model"] == info["model_name"]  # `unsloth/Qwen3-8B`, folder `unsloth_Qwen3-8B`
        assert run.meta["model_name_sanitized"] == info["model_name_sanitized"]
        assert any(f"model {info['model_name']!r} (from the file; the folder is named {folder!r})" in n
                   for n in run.fidelity)
        assert run.config["lm_eval_version"] == info["lm_eval_version"] == "0.4.9"
        assert run.flat_config["model_args.pretrained"] == info["model_name"]


def test_two_files_for_one_task_keep_the_newest_and_say_so():
    exp = _expected(ALLEN)
    llama = {r: i for r, i in exp["files"].items() if "Llama-3.1-8B-Instruct" in r}
    newest = max(llama.items(), key=lambda kv: kv[1]["date"])
    older = min(llama.items(), key=lambda kv: kv[1]["date"])
    assert newest[1]["config"]["limit"] is None and older[1]["config"]["limit"] == 10.0
    run = _runs(ALLEN_MODELS)["meta-llama__Llama-3.1-8B-Instruct"]
    key = "ko_winogrande/exact_match,get-answer"
    assert run.last_value(key) == pytest.approx(newest[1]["results"]["ko_winogrande"]["exact_match,get-answer"])
    assert run.point_count(key) == 1
    note = next(n for n in run.fidelity if "also scored in the newer" in n)
    assert os.path.basename(older[0]) in note and os.path.basename(newest[0]) in note
    # the config is the full run's: no `limit` (null), all 1643 samples
    assert "limit" not in run.config
    assert run.flat_config["tasks.ko_winogrande.n_samples"] == newest[1]["n-samples"]["ko_winogrande"]["effective"]


def test_unscored_group_entries_are_skipped_with_a_note_and_limit_goes_per_task():
    run = _runs(ALLEN_MODELS)["upstage__SOLAR-10.7B-Instruct-v1.0"]
    assert not any(k.startswith("leaderboard_math_hard/") for k in run.metric_keys())
    assert "leaderboard_math_algebra_hard/exact_match,none" in run.metric_keys()
    assert any("1 group entry without scores skipped (leaderboard_math_hard)" in n for n in run.fidelity)
    # the winogrande file ran with --limit 10, the other two in full: said per task
    assert run.flat_config["tasks.winogrande.limit"] == 10.0
    assert "tasks.ko_winogrande.limit" not in run.flat_config and "limit" not in run.config
    # a harness upgrade between the files is said (git_hash 9b052fdc → 6653bd23)
    assert any("run settings differ" in n and "git_hash" in n for n in run.fidelity)
    assert run.config["git_hash"] == "6653bd23"
    # the group's declared direction is listed (higher_is_better still names it) but it has no key
    goals = run.meta["goals"]
    assert all(g == {"goal": "max", "source": GOAL_SOURCE} for g in goals.values())
    assert "leaderboard_math_hard/exact_match,none" not in goals


def test_api_model_args_and_task_settings():
    run = _runs(ALLEN_MODELS)["gpt-4o"]
    assert run.config["model"] == "openai-chat-completions"
    assert run.config["model_args"] == {"model": "gpt-4o"}
    task = run.config["tasks"]["winogrande"]
    assert task["num_fewshot"] == 0 and task["output_type"] == "generate_until"
    assert task["filters"] == ["get-answer"] and task["n_samples"] == 10
    assert run.meta["model"] == "gpt-4o"


def test_the_older_renamed_layout_still_reads(realdata):
    """saucam/model_evals: lm-eval git 3196e907, files renamed `<task>.json`, no higher_is_better
    (directions from each task config's metric_list), figures from the shared README."""
    root = realdata / "lmeval-saucam-llama3"
    before = hash_tree(str(root))
    src = open_source(f"local:{root}")
    runs = {r.run_id.split("/")[1]: src.load_run(r) for r in src.list_runs()}
    base, inst = runs["Meta-Llama-3-8B"], runs["Meta-Llama-3-8B-Instruct"]
    key = "gsm8k/exact_match,strict-match"
    assert base.summary[key] == pytest.approx(0.5087187263078089)
    assert inst.last_value(key) == pytest.approx(0.7559, abs=1e-4)
    assert base.flat_config["model_args.pretrained"] == "meta-llama/Meta-Llama-3-8B"
    assert base.flat_config["model_args.dtype"] == "auto"
    assert base.flat_config["model_args.trust_remote_code"] is False
    assert base.flat_config["tasks.arc_challenge.num_fewshot"] == 25
    assert base.meta["goals"]["arc_challenge/acc_norm,none"]["goal"] == "max"
    assert "metric_list" in base.meta["goals"]["arc_challenge/acc_norm,none"]["source"]
    assert base.meta["model"] == "meta-llama/Meta-Llama-3-8B"  # the folder is `openllm`
    assert hash_tree(str(root)) == before


# -- the command line, as a user runs it ------------------------------------------------------------


def test_compare_two_models_shows_every_task_metric_with_its_direction(capsys):
    a, b = ARAAG_MODELS / "unsloth_Qwen3-8B", ARAAG_MODELS / "linjc16_Panacea-7B-Chat"
    assert main(["compare", str(a), str(b), "--all", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    exp = _expected(ARAAG)["files"]
    info = next(i for r, i in exp.items() if "unsloth_Qwen3-8B" in r)
    want = {f"{t}/{m}" for t, e in info["results"].items() for m in e if m != "alias"}
    got = {m["metric"]: m for m in out["metrics"]}
    assert set(got) >= want, sorted(want - set(got))
    for key in want:
        assert got[key]["goal"] == "max" and got[key]["direction"]["reason"] == GOAL_SOURCE, key
    assert main(["compare", str(a), str(b), "--all"]) == 0
    text = capsys.readouterr().out
    assert "MedQA_0-shot/acc,none ↑" in text and "PubMedQA_0-shot/f1,none ↑" in text
    assert "no comparable metric" not in text


def test_diff_shows_the_model_difference_in_the_config_diff(capsys):
    a, b = ALLEN_MODELS / "upstage__SOLAR-10.7B-Instruct-v1.0", ALLEN_MODELS / "gpt-4o"
    code = main(["diff", str(a), str(b), "--metric", "winogrande/exact_match,get-answer",
                 "--all-keys", "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    changes = {c["key"]: c for c in out["config_changes"]}
    assert changes["model"]["old"] == "hf" and changes["model"]["new"] == "openai-chat-completions"
    assert changes["model_args.pretrained"]["old"] == "upstage/SOLAR-10.7B-Instruct-v1.0"
    assert changes["model_args.model"]["new"] == "gpt-4o"
    assert out["goal"] == "max" and out["goal_reason"] == GOAL_SOURCE
    files = _expected(ALLEN)["files"]
    solar = next(i for r, i in files.items() if r.endswith("results_2024-12-23T14-36-36.300029.json"))
    gpt = next(i for r, i in files.items() if "gpt-4o" in r)
    assert out["headline_a"]["final"] == pytest.approx(solar["results"]["winogrande"]["exact_match,get-answer"])
    assert out["headline_b"]["final"] == pytest.approx(gpt["results"]["winogrande"]["exact_match,get-answer"])
    # SOLAR's folder scores 9 tasks, gpt-4o's one: the task settings differ too (collapsed
    # without --all-keys); the model keys come first
    assert main(["diff", str(a), str(b), "--metric", "winogrande/exact_match,get-answer"]) == 0
    text = capsys.readouterr().out
    assert "`model`: 'hf' → 'openai-chat-completions'" in text
    assert "`model_args.model`: (absent) → 'gpt-4o'" in text


def test_rank_orders_the_six_models_by_their_declared_direction(capsys):
    key = "MedQA_0-shot/acc,none"
    exp = _expected(ARAAG)["files"]
    by_model = {os.path.basename(os.path.dirname(r)): i["results"]["MedQA_0-shot"]["acc,none"]
                for r, i in exp.items()}
    assert main(["rank", str(ARAAG_MODELS), "--metric", key, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    metric = out["metrics"][0]
    assert metric["goal"] == "max"
    order = [(row["points"][0]["run_id"], row["mean"]) for row in metric["order"]]
    assert order == sorted(by_model.items(), key=lambda kv: -kv[1])
    assert all(row["n"] == 1 for row in metric["order"])


def test_ls_and_detect_name_the_layout(capsys):
    assert main(["ls", f"local:{ARAAG_MODELS}"]) == 0
    out = capsys.readouterr().out
    assert out.count("layout: lm-eval") == 6
    assert "model 'unsloth/Qwen3-8B'" in out
    assert "MedQA_0-shot/acc,none: 1 points, steps 0–0" in out
    for folder in (ARAAG_MODELS, ALLEN_MODELS / "gpt-4o"):
        assert main(["detect", str(folder)]) == 0
        out = capsys.readouterr().out
        assert "winner: local" in out and "lm-eval" in out


def test_ls_of_a_bare_folder_of_model_folders(capsys):
    """A results file alone is `local:`'s (the trajectory adapter claims it only beside its
    samples_*.jsonl), so a bare folder of model folders lists every model."""
    assert main(["ls", str(ARAAG_MODELS)]) == 0
    assert capsys.readouterr().out.count("layout: lm-eval") == 6


# -- hostile input ----------------------------------------------------------------------------------


def test_a_truncated_results_file_is_a_note_not_a_traceback(tmp_path):
    src = next((ARAAG_MODELS / "unsloth_Qwen3-8B").glob("results_*.json"))
    model = tmp_path / "unsloth_Qwen3-8B"
    model.mkdir()
    raw = src.read_bytes()
    (model / src.name).write_bytes(raw[: len(raw) // 2])
    run = _runs(tmp_path)["unsloth_Qwen3-8B"]
    assert run.metric_keys() == [] and run.status == "unknown"
    assert any("not valid JSON" in n for n in run.fidelity)
    # beside a good file, the good file still reads
    shutil.copy(next((ARAAG_MODELS / "linjc16_Panacea-7B-Chat").glob("results_*.json")),
                model / "results_2020-01-01T00-00-00.000000.json")
    run = _runs(tmp_path)["unsloth_Qwen3-8B"]
    assert "MedQA_0-shot/acc,none" in run.metric_keys()


def test_a_huge_file_is_not_read_by_claim(tmp_path):
    big = tmp_path / "model" / "results_2024-01-01T00-00-00.json"
    big.parent.mkdir()
    with open(big, "wb") as fh:  # sparse: costs no disk
        fh.write(b'{"results": {')
        fh.truncate(600 << 20)
    module = layouts_in_order().module("lm-eval")
    t0 = time.perf_counter()
    got = module.claim(LayoutFolder(str(big.parent), [big.name], []))
    assert got is not None and time.perf_counter() - t0 < 0.5
    run = _runs(tmp_path)["model"]
    assert any("larger than 512 MiB; not read" in n for n in run.fidelity)


def test_older_metric_names_without_a_filter_and_a_dict_model_args(tmp_path):
    """lm-eval 0.3 wrote `acc`/`acc_stderr` without `,filter`, and model_args may be a dict."""
    data = {"results": {"hellaswag": {"acc": 0.5, "acc_stderr": 0.01, "acc_norm": 0.6,
                                      "acc_norm_stderr": 0.01}},
            "versions": {"hellaswag": 0},
            "config": {"model": "hf-causal", "model_args": {"pretrained": "gpt2", "dtype": "float16"},
                       "num_fewshot": 0, "batch_size": 8, "limit": None}}
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "hellaswag.json").write_text(json.dumps(data))
    run = _runs(tmp_path)["m"]
    assert sorted(run.metric_keys()) == ["hellaswag/acc", "hellaswag/acc_norm"]
    assert run.summary["hellaswag/acc_stderr"] == 0.01 and run.meta["stderr"]["hellaswag/acc"] == 0.01
    assert run.config["model_args"] == {"pretrained": "gpt2", "dtype": "float16"}
    assert run.config["tasks"]["hellaswag"]["version"] == 0 and "limit" not in run.config
    assert "goals" not in run.meta  # nothing declared: the vocabulary decides


def test_harness_scores_are_downstream_because_the_format_says_so(capsys):
    """The roles heuristic would call `MedQA_0-shot/acc,none` a proxy; an lm-eval score is the
    benchmark result itself, and the layout declares it downstream."""
    models = sorted(p for p in ARAAG_MODELS.iterdir() if p.is_dir())[:2]
    assert main(["compare", *map(str, models), "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    groups = {m["metric"]: (m["group"], m["group_source"]) for m in d["metrics"]}
    assert groups and all(g == ("downstream", "declared") for g in groups.values()), groups
