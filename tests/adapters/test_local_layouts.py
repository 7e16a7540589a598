"""local: named layouts and sniffed logs, on real public files and on files the real writers make."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

from rundiff_core.cli import main
from rundiff_core.resolve import open_source


def _runs(path) -> tuple:
    src = open_source(f"local:{path}")
    refs = src.list_runs()
    return src, refs


def _tree_hash(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(root)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()


# -- Spinning Up ----------------------------------------------------------------------------------


def test_spinningup_realdata_reads_every_epoch_with_config_and_seed(realdata):
    folder = realdata / "spinningup-rainbow-pg" / "data" / "PPO" / "Hopper-v2"
    before = _tree_hash(folder)
    src, refs = _runs(folder)
    assert sorted(r.run_id for r in refs) == sorted(os.listdir(folder))
    ref = next(r for r in refs if r.run_id == "ppo_s7932")
    run = src.load_run(ref)
    assert run.seed == 7932 and run.config["seed"] == 7932 and run.config["epochs"] == 200
    hist = run.history(["AverageEpRet", "Time Steps"])
    ret = hist[hist.key == "AverageEpRet"]
    assert len(ret) == 200 and ret.step.min() == 0 and ret.step.max() == 199
    # the Time Steps column (a name with a space) is kept as its own series
    assert hist[hist.key == "Time Steps"].value.max() == 1_000_000
    assert any("progress.txt read as TSV; x = Epoch; 20 metrics" in n for n in run.fidelity)
    assert run.summary["eval/AverageEpRet"] == pytest.approx(2054.413)
    assert _tree_hash(folder) == before  # read-only


def test_spinningup_six_seeds_are_one_arm_and_diff_is_strict(realdata, capsys):
    data = realdata / "spinningup-rainbow-pg" / "data"
    src, refs = _runs(data)
    groups = {tuple(sorted(r.run_id for r in src.seed_siblings(ref))) for ref in refs}
    assert len(groups) == 3 and all(len(g) == 6 for g in groups)  # PPO, DDPG, TD3
    code = main(["diff", str(data / "PPO/Hopper-v2/ppo_s7932"), str(data / "TD3/Hopper-v2/td3_s2521"),
                 "--metric", "AverageEpRet", "--goal", "max", "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["variance_a"]["n"] == 6 and out["variance_b"]["n"] == 6
    assert "N>=3" in out["verdict"] or "indistinguishable" in out["verdict"]


def test_diff_reads_a_metric_by_its_equivalent_name(realdata, capsys):
    """Rule: `diff --metric average-episode-return` finds Spinning Up's `AverageEpRet` in both arms
    (the synonym tier of metric names), says so, and gives the strict verdict over six seeds each;
    a name neither run logs under any spelling stays an error."""
    data = realdata / "spinningup-rainbow-pg" / "data"
    a, b = str(data / "PPO/Hopper-v2/ppo_s11096"), str(data / "DDPG/Hopper-v2/ddpg_s16628")
    assert main(["diff", a, b, "--metric", "average-episode-return", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["metric"] == "AverageEpRet" and out["goal"] == "max"
    assert any("'average-episode-return' read as 'AverageEpRet'" in w for w in out["warnings"])
    assert out["variance_a"]["n"] == 6 and out["variance_b"]["n"] == 6
    # by hand: last-10%-mean per seed is the engine's statistic; the verdict must follow 2σ
    assert out["verdict"] in ("A clearly better (Δ outside 2σ across N>=3 seeds)",
                              "B clearly better (Δ outside 2σ across N>=3 seeds)",
                              "indistinguishable within trial variance")
    assert main(["diff", a, b, "--metric", "average-episode-length-of-nothing"]) == 2
    assert "not logged" in capsys.readouterr().err


def _write_spinningup(folder: Path, seed: int, shift: float, epochs: int = 30) -> None:
    """The exact Spinning Up EpochLogger layout: config.json as `save_config` dumps it, then a
    tab-separated progress.txt with `Epoch`, `AverageEpRet`, … and `TotalEnvInteracts`."""
    folder.mkdir(parents=True)
    config = {"ac_kwargs": {"hidden_sizes": [64, 64]}, "env_fn": f"<function <lambda> at 0x7f{seed:010x}>",
              "epochs": epochs, "exp_name": folder.name.rsplit("_s", 1)[0], "gamma": 0.99,
              "logger_kwargs": {"exp_name": "cheetah", "output_dir": str(folder)}, "seed": seed}
    (folder / "config.json").write_text(json.dumps(config, separators=(",", ":\t"), indent=4,
                                                   sort_keys=True))
    rng = np.random.default_rng(seed)
    head = ["Epoch", "AverageEpRet", "StdEpRet", "EpLen", "TotalEnvInteracts", "LossPi", "Time"]
    lines = ["\t".join(head)]
    for e in range(epochs):
        ret = shift + 10 * e + rng.normal(0, 5)
        lines.append("\t".join(str(v) for v in (e, ret, abs(rng.normal(3, 1)), 1000, (e + 1) * 4000,
                                                  rng.normal(), 3.5 * (e + 1))))
    (folder / "progress.txt").write_text("\n".join(lines) + "\n")


def test_ten_s_n_seeds_per_arm_give_a_strict_verdict(tmp_path, capsys):
    for s in range(10):
        _write_spinningup(tmp_path / "ppo-cheetah" / f"ppo-cheetah_s{s}", s, shift=100)
        _write_spinningup(tmp_path / "ddpg-cheetah" / f"ddpg-cheetah_s{s}", 100 + s, shift=400)
    code = main(["diff", str(tmp_path / "ppo-cheetah" / "ppo-cheetah_s0"),
                 str(tmp_path / "ddpg-cheetah"), "--metric", "AverageEpRet", "--goal", "max",
                 "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["variance_a"]["n"] == 10 and out["variance_b"]["n"] == 10
    assert out["verdict"].startswith("B clearly better")
    src, refs = _runs(tmp_path / "ppo-cheetah")
    run = src.load_run(refs[3])
    assert run.seed == 3
    assert any("x = Epoch" in n for n in run.history() .attrs.get("fidelity", [])) or \
        any("x = Epoch" in n for n in run.fidelity)


def test_seed_from_folder_name_when_config_has_none(tmp_path):
    for name in ("run_seed-1", "run_seed-2", "run_seed-3"):
        d = tmp_path / name
        d.mkdir()
        (d / "log.csv").write_text("step,loss\n0,1.0\n1,0.5\n")
        (d / "config.yaml").write_text("lr: 0.1\n")
    src, refs = _runs(tmp_path)
    assert [src.load_run(r).seed for r in refs] == [1, 2, 3]
    assert len(src.seed_siblings(refs[0])) == 3
    (tmp_path / "run_seed-3" / "config.yaml").write_text("lr: 0.2\n")
    src, refs = _runs(tmp_path)
    assert len(src.seed_siblings(refs[0])) == 2  # a different lr is another arm


# -- HF Trainer -----------------------------------------------------------------------------------


def test_hf_trainer_checkpoints_are_one_run_read_from_the_newest(realdata):
    folder = realdata / "hf-trainer-gemma3-kaggle"
    src, refs = _runs(folder)
    assert len(refs) == 1
    run = src.load_run(refs[0])
    hist = run.history()
    assert len(hist[hist.key == "loss"]) == 75 and len(hist[hist.key == "eval_loss"]) == 19
    assert hist[hist.key == "eval_loss"].step.max() == 3765
    assert hist[hist.key == "loss"].value.iloc[0] == pytest.approx(14.7537890625)
    assert run.summary["train_loss"] == pytest.approx(0.7182432909252475)  # the final row
    assert run.summary["best_metric"] == pytest.approx(0.7326762080192566)
    assert run.status == "finished"
    assert any("19 checkpoint-* snapshot(s)" in n for n in run.fidelity)
    assert "loss" not in run.summary


def test_hf_trainer_without_root_state_reads_the_newest_checkpoint(tmp_path, realdata):
    src_root = realdata / "hf-trainer-llamafactory-mistral"
    for ck in ("checkpoint-500", "checkpoint-8500", "checkpoint-1000"):
        (tmp_path / ck).mkdir()
        (tmp_path / ck / "trainer_state.json").write_bytes((src_root / ck / "trainer_state.json").read_bytes())
    src, refs = _runs(tmp_path)
    assert len(refs) == 1
    run = src.load_run(refs[0])
    loss = run.history(["loss"])
    assert len(loss) == 850 and loss.step.max() == 8500  # checkpoint k holds the first k/10 rows
    assert any("checkpoint-8500/trainer_state.json" in n for n in run.fidelity)


def test_hf_trainer_state_in_the_exact_layout_keeps_train_and_eval_apart(tmp_path):
    """TrainerState.save_to_json: json.dumps(asdict(state), indent=2, sort_keys=True) + newline."""
    log = [{"epoch": 0.5, "grad_norm": 1.0, "learning_rate": 1e-4, "loss": 2.0, "step": 10},
           {"epoch": 1.0, "eval_loss": 1.9, "eval_runtime": 3.0, "step": 20},
           {"epoch": 1.0, "grad_norm": 0.9, "learning_rate": 5e-5, "loss": 1.5, "step": 20}]
    state = {"best_metric": None, "epoch": 1.0, "global_step": 20, "log_history": log,
             "logging_steps": 10, "max_steps": 20, "num_train_epochs": 1, "train_batch_size": 8}
    (tmp_path / "trainer_state.json").write_text(json.dumps(state, indent=2, sort_keys=True) + "\n")
    run = open_source(f"local:{tmp_path}").load_run(open_source(f"local:{tmp_path}").list_runs()[0])
    hist = run.history()
    assert sorted(hist.key.unique()) == ["epoch", "eval_loss", "eval_runtime", "grad_norm",
                                         "learning_rate", "loss"]
    assert list(hist[hist.key == "epoch"].step) == [10, 20]  # one epoch point per step
    assert run.config["logging_steps"] == 10 and run.status == "unknown"


# -- Stable-Baselines3 ----------------------------------------------------------------------------


def test_sb3_realdata_progress_and_monitor_files(realdata):
    src, refs = _runs(realdata / "sb3-insper-dqn-a2c" / "results")
    by = {r.run_id: r for r in refs}
    run = src.load_run(by["dqn-cartpole"])
    hist = run.history()
    assert len(hist[hist.key == "rollout/ep_rew_mean"]) == 490
    assert len(hist[hist.key == "train/loss"]) == 489  # the first row's empty cell is no point
    assert "time/total_timesteps" not in set(hist.key)
    src, refs = _runs(realdata / "sb3-zoo-ppo-clipping" / "logs" / "ppo")
    runs = [src.load_run(r) for r in refs]
    assert [r.seed for r in runs] == [10, 0, 696763019]  # from args.yml (an OrderedDict dump)
    lengths = [len(r.history(["episode/reward"])) for r in runs]
    assert lengths == [368, 351, 394]
    steps = runs[0].history(["episode/length"])
    assert steps.step.max() == 98279 and steps.step.is_monotonic_increasing


@pytest.mark.slow
def test_sb3_real_logger_and_monitor_round_trip(tmp_path):
    pytest.importorskip("stable_baselines3")
    import gymnasium as gym
    from stable_baselines3 import PPO
    from stable_baselines3.common.logger import configure
    from stable_baselines3.common.monitor import Monitor

    out = tmp_path / "ppo-cartpole_s3"
    out.mkdir()
    env = Monitor(gym.make("CartPole-v1"), str(out / "0"))
    model = PPO("MlpPolicy", env, n_steps=64, batch_size=32, n_epochs=1, seed=3, verbose=0,
                device="cpu")
    model.set_logger(configure(str(out), ["csv"]))
    model.learn(total_timesteps=256)
    env.close()
    src, refs = _runs(out)
    run = src.load_run(refs[0])
    assert run.meta["layout"] == "sb3" and run.seed == 3
    hist = run.history()
    rows = (out / "progress.csv").read_text().strip().splitlines()
    assert len(hist[hist.key == "time/fps"]) == len(rows) - 1
    monitor_rows = (out / "0.monitor.csv").read_text().strip().splitlines()[2:]
    assert len(hist[hist.key == "episode/reward"]) == len(monitor_rows)


# -- Keras CSVLogger ------------------------------------------------------------------------------


def test_keras_csvlogger_realdata_under_any_name(realdata):
    for folder, name, epochs, cols in (("keras-csvlogger-mnist", "training_log.csv", 30, 5),
                                       ("keras-csvlogger-ecg", "training.log", 70, 3)):
        src, refs = _runs(realdata / folder)
        run = src.load_run(refs[0])
        hist = run.history()
        assert hist.key.nunique() == cols and len(hist) == epochs * cols
        assert any(f"{name}: Keras CSVLogger" in n for n in run.fidelity)
    ecg = hist[hist.key == "val_loss"]
    assert ecg.value.min() < -6e7  # negative, diverging: kept as logged


# -- DVCLive, Sacred, lm-eval ---------------------------------------------------------------------


def test_dvclive_realdata_both_layouts(realdata):
    src, refs = _runs(realdata / "dvclive-hf-skypilot")
    run = src.load_run(refs[0])
    hist = run.history()
    assert len(hist[hist.key == "loss"]) == 107 and len(hist[hist.key == "eval/loss"]) == 107
    assert len(hist[hist.key == "train/loss"]) == 1 and len(hist[hist.key == "epoch"]) == 215
    assert run.summary["eval/loss"] == pytest.approx(0.7261927127838135)
    assert run.config["do_train"] is False and "pipeline" in run.config
    src, refs = _runs(realdata / "dvclive-legacy-iterative-example")
    run = src.load_run(refs[0])
    hist = run.history(["val_acc"])
    assert len(hist) == 10 and np.isfinite(hist.wall_time).all()  # ms timestamps → seconds
    assert 1.6e9 < hist.wall_time.iloc[0] < 1.7e9


def test_sacred_realdata_status_config_metrics(realdata):
    src, refs = _runs(realdata / "sacred-ml-pws" / "runs")
    by = {r.run_id: src.load_run(r) for r in refs}
    assert by["1"].status == "finished" and by["3"].status == "crashed"
    assert len(by["3"].history(["training.loss"])) == 400
    assert by["73"].history().empty and by["73"].status == "crashed"
    assert by["1"].seed == by["1"].config["seed"]
    run = open_source(f"local:{realdata / 'sacred-pymarl-messy-smac'}")
    r2 = next(r for r in run.list_runs() if r.run_id.endswith("2"))
    hist = run.load_run(r2).history()
    assert len(hist[hist.key == "return_mean"]) == 10 and len(hist[hist.key == "loss"]) == 9


def test_lmeval_realdata_final_metrics_per_task(realdata):
    src, refs = _runs(realdata / "lmeval-saucam-llama3")
    runs = {r.run_id.split("/")[1]: src.load_run(r) for r in refs}
    base, inst = runs["Meta-Llama-3-8B"], runs["Meta-Llama-3-8B-Instruct"]
    assert base.summary["gsm8k/exact_match,strict-match"] == pytest.approx(0.5087187263078089)
    assert inst.summary["gsm8k/exact_match,strict-match"] == pytest.approx(0.7559, abs=1e-4)
    assert base.config["model_args"]["pretrained"] == "meta-llama/Meta-Llama-3-8B"
    assert base.config["tasks"]["arc_challenge"]["num_fewshot"] == 25


# -- sniffed tables -------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["csv", "tsv", "ws", "jsonl", "json"])
def test_sniffed_formats_read_in_full_with_the_layout_said(tmp_path, fmt):
    rows = [{"iteration": i, "loss": 1.0 / (i + 1), "acc": i / 10, "tag": f"r{i}"} for i in range(50)]
    rows[3]["loss"] = float("nan")
    path = tmp_path / f"train.{ {'ws': 'txt', 'json': 'json'}.get(fmt, fmt)}"
    if fmt in ("csv", "tsv", "ws"):
        sep = {"csv": ",", "tsv": "\t", "ws": "   "}[fmt]
        lines = [sep.join(rows[0])] + [sep.join(str(v) for v in r.values()) for r in rows]
        path.write_text("\n".join(lines) + "\n")
    elif fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        path.write_text(json.dumps(rows))
    src, refs = _runs(tmp_path)
    run = src.load_run(refs[0])
    hist = run.history()
    loss = hist[hist.key == "loss"]
    assert len(loss) == 50 and np.isnan(loss.value.iloc[3])  # a logged NaN is a point
    assert list(loss.step) == list(range(50))
    assert set(hist.key) == {"loss", "acc"}
    note = next(n for n in run.fidelity if "read as" in n)
    assert "x = iteration" in note and "2 metrics" in note and "1 text column(s) skipped (tag)" in note


def test_row_index_is_said_when_no_step_column(tmp_path):
    (tmp_path / "log.csv").write_text("loss,acc\n0.9,0.1\n0.8,0.2\n0.7,0.3\n")
    run = open_source(f"local:{tmp_path}").load_run(open_source(f"local:{tmp_path}").list_runs()[0])
    assert list(run.history(["loss"]).step) == [0, 1, 2]
    assert any("x = row index (no step-like column)" in n for n in run.fidelity)


def test_bare_path_is_detected_as_local(realdata, capsys):
    assert main(["detect", str(realdata / "text-llmc-gpt2-124m")]) == 0
    assert "winner: local" in capsys.readouterr().out


def test_docs_list_every_layout_in_detection_order():
    """docs/local.md's order table is the layout registry's, generated (layout_table_markdown);
    docs/addresses.md has a row for each."""
    import re

    from rundiff_core import layouts_in_order
    from rundiff_core.layouts import layout_table_markdown

    specs = layouts_in_order().ordered()
    root = Path(__file__).resolve().parents[2] / "docs"
    text = (root / "local.md").read_text()
    assert layout_table_markdown(specs) in text, "regenerate the table: layout_table_markdown()"
    rows = re.findall(r"^\| 100 · (\d+) \| local — ", (root / "addresses.md").read_text(), re.M)
    assert [int(n) for n in rows] == list(range(1, len(specs) + 1))


def test_dvclive_files_written_by_dvclive(tmp_path):
    """tests/fixtures/dvclive: written once by dvclive (see VERSION) with
    scripts/make_dvclive_fixtures.py; dvclive pulls dvc, too heavy for every CI run."""
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "dvclive"
    before = _tree_hash(fixture)
    src, refs = _runs(fixture)
    assert len(refs) == 1
    run = src.load_run(refs[0])
    assert run.config == {"lr": 0.01, "seed": 7, "model": {"layers": 2, "width": 64}} and run.seed == 7
    assert run.summary["best_eval_loss"] == 0.125 and run.summary["eval/loss"] == 0.125
    hist = run.history()
    loss = hist[hist.key == "loss"]
    assert list(loss.step) == list(range(20)) and np.isnan(loss.value.iloc[3])
    assert loss.value.iloc[4] == pytest.approx(2.0 / 5)
    assert list(hist[hist.key == "eval/loss"].step) == [4, 9, 14, 19]
    assert len(hist[hist.key == "train/acc"]) == 20
    assert _tree_hash(fixture) == before


def test_sacred_files_written_by_sacred():
    """tests/fixtures/sacred: written once by sacred (see VERSION) with
    scripts/make_sacred_fixtures.py; sacred 0.8.7 needs pkg_resources, gone from this setuptools."""
    runs_dir = Path(__file__).resolve().parents[1] / "fixtures" / "sacred" / "runs"
    src, refs = _runs(runs_dir)
    by = {r.run_id: r for r in refs}
    runs = {k: src.load_run(r) for k, r in by.items()}
    assert sorted(runs) == ["1", "2", "3", "4", "5"]
    assert [runs[k].seed for k in ("1", "2", "3")] == [1, 2, 3]
    assert runs["1"].status == "finished" and runs["1"].summary["result"] == 0.5
    loss = runs["2"].history(["loss"])
    assert list(loss.step) == [0, 1, 2, 3, 4]
    assert list(loss.value) == pytest.approx([1.1, 0.6, 1 / 3 + 0.1, 0.35, 0.3], abs=1e-6)
    assert loss.wall_time.notna().all()
    assert len(runs["1"].history(["eval.acc"])) == 5
    failed = runs["5"]
    assert failed.status == "crashed" and len(failed.history(["loss"])) == 2
    assert "diverged at step 2" in failed.events[0].payload["reason"]
    assert sorted(r.run_id for r in src.seed_siblings(by["1"])) == ["1", "2", "3"]
    assert [r.run_id for r in src.seed_siblings(by["4"])] == ["4"]  # another lr: another arm


def test_rl_return_names_are_maximised_and_spelled_alike():
    from rundiff_core.engines.directions import vocabulary
    from rundiff_core.engines.metricnames import synonym_key

    for name in ("AverageEpRet", "TestEpRet", "rollout/ep_rew_mean", "episode/reward"):
        assert vocabulary(name).goal == "max", name
    assert vocabulary("interpret_loss").goal == "min"
    assert vocabulary("interpretability").goal is None  # no word of the vocabulary: unknown
    assert synonym_key("AverageEpRet") == synonym_key("average-episode-return")


def test_sacred_pymarl_two_runs_of_one_config_are_declared_seeds(realdata):
    """The real pymarl runs 1 and 2 have equal config.json files but for `seed` (their run.json
    differ only in git `dirty`, times and heartbeat): the local adapter declares them seeds of
    one arm by the one arm-config rule. Its own rule used to keep them apart because run `2`'s
    folder name occurs inside `env: messy_sc2` (a substring is not a path through the folder)."""
    root = realdata / "sacred-pymarl-messy-smac" / "results" / "sacred"
    raw = [json.loads((root / rid / "config.json").read_text()) for rid in ("1", "2")]
    assert raw[0]["seed"] != raw[1]["seed"] and raw[1]["env"] == "messy_sc2"
    assert {k: v for k, v in raw[0].items() if k != "seed"} == {k: v for k, v in raw[1].items() if k != "seed"}
    src, refs = _runs(realdata / "sacred-pymarl-messy-smac")
    assert {tuple(sorted(r.run_id for r in src.seed_siblings(ref))) for ref in refs} == {
        ("results/sacred/1", "results/sacred/2")}
    from rundiff_core.engines.arms import load_arms

    arms = load_arms(f"local:{realdata / 'sacred-pymarl-messy-smac'}")
    assert [(a.n, a.how) for a in arms] == [(2, "seed siblings the source declares")]
