"""local: Ray Tune trial folders, Hydra's `.hydra/` config overlay and the HF Trainer's
`last-checkpoint/`, on real folders people trained with (tests/fixtures/realworld/<layout>/<source>/,
each with PROVENANCE.md and a stdlib-computed expected.json: every figure asserted here comes from
those files, never from rundiff) and, for Hydra multiruns (the one licensed real sample was
dropped), on sweeps written by the real Hydra (`hydra-core`, a tiny `@hydra.main` app run with
`-m` in a subprocess; its CSV figures are counted here with the csv module)."""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from rundiff_core import LayoutFolder, layouts_in_order
from rundiff_core.cli import main
from rundiff_core.detect import collect_claims
from rundiff_core.resolve import open_source
from rundiff_core.testing import LayoutContract, WrittenLayout, hash_tree

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "realworld"
RAY, HYDRA, HF = REAL / "raytune", REAL / "hydra", REAL / "hf-output"
RAY05 = RAY / "rl-experiments-ray05"
RAY1 = RAY / "rllib-accelerating-ray1"
RAY27 = RAY / "rllib-emecom-ray27"
EXP27 = RAY27 / "ray_results" / "goal_comms_gridworld" / "goal_comms_gridworld"
T27_OK = "PPO_goal_comms_gridworld_08bd7_00000_0_2023-10-08_14-38-58"
T27_EMPTY = "PPO_goal_comms_gridworld_2e66a_00000_0_2023-10-03_10-42-35"
PONG = RAY05 / "pong-speedrun"
PONG128 = PONG / "pong-impala-lowlatency-128" / "IMPALA_PongNoFrameskip-v4_0_2018-11-10_00-17-220NYeDg"
PONG32 = PONG / "pong-impala-lowlatency-32" / "IMPALA_PongNoFrameskip-v4_0_2018-11-10_03-45-30PllGMK"
COMPOSER, NEURAL_SA = HYDRA / "composer2-lightning-run", HYDRA / "neural-sa-run"
WHISPER = HF / "whisper-ja-last-checkpoint"


def _expected(source: Path) -> dict:
    return json.loads((source / "expected.json").read_text())


def _runs(path) -> dict:
    src = open_source(f"local:{path}")
    return {ref.run_id: src.load_run(ref) for ref in src.list_runs()}


def _one(path):
    (run,) = _runs(path).values()
    return run


def _notes(run) -> str:
    run.history()  # the history's notes join the run's
    return "\n".join(run.fidelity)


# -- Ray Tune: the contract on every real source ---------------------------------------------------


def _ray_written(source: Path, root: Path) -> WrittenLayout:
    """Per trial (relative to `root`): points per key = the finite points plus the logged NaN
    ones (bare `NaN` tokens are NaN points), the last value, params.json entries."""
    runs: dict[str, dict] = {}
    for rel_trial, t in _expected(source)["trials"].items():
        want: dict = {"points": {}, "last": {}, "config": dict(t["params"])}
        for key, m in (t.get("metrics") or {}).items():
            want["points"][key] = m["points"] + m["nan_points"]
            want["last"][key] = m["last_value"] if m["points"] else math.nan
        runs[os.path.relpath(source / rel_trial, root)] = want
    return WrittenLayout(str(root), "raytune", runs)


RAY_SOURCES = {
    "ray-0.5-impala-nan-tokens": (RAY05, PONG),
    "ray-1.x-hand-named-logdirs": (RAY1, RAY1),
    "ray-2.7-experiment-dir-crashed-and-empty": (RAY27, EXP27),
}


class TestRayTuneContract(LayoutContract):
    layout = "raytune"

    @pytest.fixture(params=sorted(RAY_SOURCES))
    def written_layout(self, request) -> WrittenLayout:
        return _ray_written(*RAY_SOURCES[request.param])


# -- Ray Tune: what each real trial says -----------------------------------------------------------


def test_ray_result_json_rows_are_the_history_x_training_iteration_nan_tokens_kept():
    t = _expected(RAY05)["trials"]
    runs = _runs(PONG)
    for rel, want in t.items():
        run = runs[os.path.relpath(RAY05 / rel, PONG)]
        assert run.meta["layout"] == "raytune" and run.status == "unknown"  # done is false
        hist = run.history(["episode_reward_mean", "timesteps_total"])
        ts = hist[hist.key == "timesteps_total"]
        assert ts.step.min() == want["first_step"] and ts.step.max() == want["last_step"]
        assert run.last_value("timesteps_total") == want["last_timesteps_total"]
        m = want["metrics"]["episode_reward_mean"]
        assert run.nonfinite("episode_reward_mean")[0] == m["nan_points"]
        finite = hist[(hist.key == "episode_reward_mean") & hist.value.notna()]
        assert finite.step.min() == m["first_step"]
        assert finite.value.min() == pytest.approx(m["min"]) and finite.value.max() == pytest.approx(m["max"])
        assert hist.wall_time.notna().all()  # Ray's `timestamp` is the wall time
        assert run.summary["time_total_s"] == pytest.approx(want["last_time_total_s"])
        assert run.summary["training_iteration"] == want["last_step"]
        assert len(run.config) == want["params_top_keys"]  # params.json, not the row's `config`
        notes = _notes(run)
        assert "x = training_iteration" in notes and "`config` (→ config from params.json)" in notes
        assert "progress.csv: the same rows as CSV; not read again" in notes
        assert "config/" not in " ".join(run.metric_keys())  # the row's config is never a series


def test_ray_nested_info_and_sampler_results_are_flattened_with_slashes():
    run = _runs(EXP27)[T27_OK]
    keys = run.metric_keys()
    assert "sampler_results/episode_reward_mean" in keys
    assert any(k.startswith("info/learner/") for k in keys)
    assert not any(k.startswith(("config", "hist_stats")) or k == "pid" for k in keys)
    want = _expected(RAY27)["trials"][os.path.relpath(EXP27 / T27_OK, RAY27)]
    assert run.last_value("sampler_results/episode_reward_mean") == pytest.approx(
        want["metrics"]["episode_reward_mean"]["last_value"])
    assert run.meta["trial_id"] == want["trial_id"]
    assert "list field(s) (sampler_results/hist_stats/episode_reward" in _notes(run)


def test_ray_error_txt_is_a_crash_with_its_last_line_and_an_empty_result_json_no_points():
    runs = _runs(EXP27)
    crashed = runs[T27_OK]
    assert crashed.status == "crashed"
    reason = (EXP27 / T27_OK / "error.txt").read_text().strip().splitlines()[-1].strip()
    assert reason.startswith("AttributeError")
    assert any(n == f"error.txt → status crashed: {reason}" for n in crashed.fidelity)
    assert [e.kind for e in crashed.events] == ["crash"] and crashed.events[0].step == 9
    assert crashed.events[0].payload["reason"] == reason
    empty = runs[T27_EMPTY]
    assert (EXP27 / T27_EMPTY / "result.json").stat().st_size == 0
    assert empty.status == "crashed" and empty.metric_keys() == []
    notes = _notes(empty)
    assert "result.json is empty (0 bytes): the trial reported no result (see error.txt); no points" in notes
    # its experiment_state (JSON, trial_data pairs of JSON strings) says ERROR too
    status = _expected(RAY27)["experiment_files"][
        os.path.relpath(EXP27 / "experiment_state-2023-10-03_10-42-34.json", RAY27)]["trial_status"]
    assert status == [["2e66a_00000", "ERROR"]]
    assert "../experiment_state-2023-10-03_10-42-34.json: trial status ERROR" in notes
    assert empty.config["lr"] == 0.0005 and len(empty.config) == 153


def test_ray_done_true_is_finished(tmp_path):
    trial = tmp_path / "exp" / "model4_2_iters"
    shutil.copytree(RAY1 / "ray_results" / "model4_2_iters", trial)
    lines = (trial / "result.json").read_text().splitlines()
    last = json.loads(lines[-1])
    last["done"] = True
    (trial / "result.json").write_text("\n".join(lines[:-1] + [json.dumps(last)]) + "\n")
    run = _runs(tmp_path / "exp")["model4_2_iters"]
    assert run.status == "finished"
    assert "the last result.json row has done: true → status finished" in run.fidelity


def test_ray_progress_csv_is_read_only_when_result_json_is_empty(tmp_path):
    trial = tmp_path / PONG128.name
    shutil.copytree(PONG128, trial)
    (trial / "result.json").write_bytes(b"")
    want = _expected(RAY05)["trials"][os.path.relpath(PONG128, RAY05)]
    run = _one(trial)
    assert run.point_count("timesteps_total") == want["progress_rows"]
    assert run.last_step("timesteps_total") == float(want["progress_last_training_iteration"])
    notes = _notes(run)
    assert "result.json is empty (0 bytes): read progress.csv instead" in notes
    assert "x = training_iteration" in notes
    # progress.csv's stringified-dict cells (config, info) are text, named as skipped
    assert "text column(s) skipped" in notes and "config" in notes
    (trial / "result.json").unlink()  # no result.json at all: params.json + Tune's progress.csv
    run = _one(trial)
    assert run.meta["layout"] == "raytune" and "no result.json" in run.fidelity[0]
    assert run.point_count("timesteps_total") == want["progress_rows"]
    assert "no result.json: read progress.csv instead" in _notes(run)


def test_ray_experiment_folder_is_the_trials_collection_and_rank_ranks_them(capsys):
    src = open_source(f"local:{EXP27}")
    refs = src.list_runs()
    assert len(refs) == 2
    assert {src.collection(r) for r in refs} == {f"local:{EXP27}"}
    assert main(["rank", f"local:{EXP27}", "--metric", "episode_reward_mean", "--format", "json"]) == 0
    m = json.loads(capsys.readouterr().out)["metrics"][0]
    assert m["goal"] == "max" and m["direction"]["source"] == "vocabulary"
    assert [p["run_id"] for g in m["order"] for p in g["points"]] == [T27_OK]
    # two trials of one published benchmark: ranked by their reward
    assert main(["rank", str(PONG), "--metric", "episode_reward_mean", "--step", "23",
                 "--format", "json"]) == 0
    ranked = json.loads(capsys.readouterr().out)
    m = ranked["metrics"][0]
    t = _expected(RAY05)["trials"]
    rewards = {os.path.basename(os.path.dirname(k)): v["metrics"]["episode_reward_mean"]["last_value"]
               for k, v in t.items()}
    assert rewards["pong-impala-lowlatency-128"] > 18.6  # 128 workers at iteration 23
    # a trial is named by its run's name; what tells it apart is its `differs` (docs/names.md)
    best = next(a for a in ranked["arms"] if a["label"] == m["order"][0]["label"])
    assert best["differs"] == "num_workers=128"


def test_ray_cli_ls_detect_and_diff_read_as_a_user_would(capsys):
    assert main(["detect", str(EXP27)]) == 0
    out = capsys.readouterr().out
    assert "winner: local" in out and "(raytune)" in out  # ahead of its TensorBoard copy
    assert main(["ls", str(EXP27)]) == 0
    out = capsys.readouterr().out
    assert out.count("layout: raytune") == 2 and "error.txt → status crashed" in out
    assert main(["diff", f"local:{PONG128}", f"local:{PONG32}", "--metric", "episode_reward_mean",
                 "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    p128 = _expected(RAY05)["trials"][os.path.relpath(PONG128, RAY05)]["params"]
    p32 = _expected(RAY05)["trials"][os.path.relpath(PONG32, RAY05)]["params"]
    assert d["config_changes"] == [{"change": "changed", "key": "num_workers",
                                    "old": p128["num_workers"], "new": p32["num_workers"]}]
    assert d["goal"] == "max"
    assert d["headline_a"]["final"] == pytest.approx(
        _expected(RAY05)["trials"][os.path.relpath(PONG128, RAY05)]["metrics"]["episode_reward_mean"]["last_value"])


def test_ray_state_files_pickles_named_json_and_the_tuners_metric(tmp_path):
    exp = tmp_path / "exp"
    shutil.copytree(EXP27, exp)
    # Ray 2.7's basic-variant-state-*.json are pickles (PROVENANCE: they start 80 05 95)
    (exp / "basic-variant-state-2023-10-03_10-42-34.json").write_bytes(b"\x80\x05\x95" + b"\x00" * 64)
    state = json.loads((exp / "experiment_state-2023-10-03_10-42-34.json").read_text())
    state["runner_data"]["_metric"] = "episode_reward_mean"  # metric set, mode (pickled) unknown
    (exp / "experiment_state-2023-10-03_10-42-34.json").write_text(json.dumps(state))
    run = _runs(exp)[T27_OK]
    notes = "\n".join(run.fidelity)
    assert "basic-variant-state-2023-10-03_10-42-34.json: a pickle despite its .json name" in notes
    assert "the tuner's metric is 'episode_reward_mean'; its mode is not in the JSON state" in notes
    assert "goals" not in run.meta and run.meta["tune_metric"] == "episode_reward_mean"
    # a JSON state that does name both (hand-made: no Ray version here writes `_mode`) declares it
    state["runner_data"]["_mode"] = "max"
    (exp / "experiment_state-2023-10-03_10-42-34.json").write_text(json.dumps(state))
    run = _runs(exp)[T27_OK]
    assert run.meta["goals"]["episode_reward_mean"]["goal"] == "max"
    assert "Ray Tune experiment_state" in run.meta["goals"]["episode_reward_mean"]["source"]


def test_ray_hostile_copies_give_notes_not_tracebacks(tmp_path):
    src = RAY1 / "ray_results" / "volta1" / "model1_ppo_both_gpus_all_driver_it_1_7"
    raw = (src / "result.json").read_bytes()
    lines = raw.split(b"\n")
    torn = tmp_path / "torn"
    shutil.copytree(src, torn)
    (torn / "result.json").write_bytes(raw[: len(raw) - len(lines[-2]) // 2 - 1])  # cut the last row
    garbled = tmp_path / "garbled"
    shutil.copytree(src, garbled)
    (garbled / "result.json").write_bytes(b"\n".join(lines[:2] + [b"{not json", b"[1, 2]"] + lines[2:]))
    runs = _runs(tmp_path)
    notes = _notes(runs["torn"])
    assert "truncated last line 7" in notes and runs["torn"].point_count("timesteps_total") == 6
    notes = _notes(runs["garbled"])
    assert "2 corrupt line(s) skipped (line 3, 4)" in notes
    assert runs["garbled"].point_count("timesteps_total") == 7
    bad_params = tmp_path / "bad-params"
    shutil.copytree(src, bad_params)
    (bad_params / "params.json").write_text('{"lr": 5e-05, "num_wor')
    run = _runs(tmp_path)["bad-params"]
    assert any("params.json: not valid JSON" in n for n in run.fidelity)
    assert run.config["lr"] == 5e-05  # from the last row's config
    assert any("config from the last result.json row" in n for n in run.fidelity)


def test_ray_claim_reads_a_few_bytes_and_refuses_what_is_not_a_trial(tmp_path):
    (tmp_path / "params.json").write_text("{}")
    with open(tmp_path / "result.json", "wb") as fh:  # a 64 MiB result.json of garbage
        fh.write(b"\x00garbage" * 8)
        fh.truncate(64 << 20)
    module = layouts_in_order().module("raytune")
    asked: list[int] = []

    class Counting(LayoutFolder):
        def head(self, name: str, n: int = 4096) -> bytes:
            asked.append(n)
            return super().head(name, n)

    t0 = time.perf_counter()
    assert module.claim(Counting(str(tmp_path), ["params.json", "result.json"], [])) is None
    assert time.perf_counter() - t0 < 0.5 and max(asked) <= 4096
    (tmp_path / "result.json").write_bytes(b'{"training_iteration": 1, "loss": 0.5}\n')
    assert module.claim(LayoutFolder(str(tmp_path), ["result.json"], [])) is None  # no params.json
    got = module.claim(LayoutFolder(str(tmp_path), ["params.json", "result.json"], ["checkpoint_000001"]))
    assert got is not None and got.consumed == {"checkpoint_000001"}


# -- Hydra: the overlay on real run folders and on sweeps the real Hydra wrote ---------------------

SWEEP_APP = '''
import csv, os
import hydra
from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig

ConfigStore.instance().store(name="cfg", node={"lr": 0.1, "epochs": 6, "seed": 0,
                                               "model": {"depth": 2}})

@hydra.main(version_base=None, config_name="cfg")
def main(cfg):
    out = HydraConfig.get().runtime.output_dir
    with open(os.path.join(out, "metrics.csv"), "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["epoch", "loss", "acc"])
        for e in range(cfg.epochs):
            w.writerow([e, 1.0 / (1 + cfg.lr * 10 * (e + 1)) + 0.01 * cfg.seed, e * cfg.lr])

if __name__ == "__main__":
    main()
'''

RUN_APP = '''
import json, os
import hydra
from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig
from omegaconf import OmegaConf

ConfigStore.instance().store(name="cfg", node={"lr": 0.1, "epochs": 4, "seed": 3,
                                               "model": {"depth": 2}})

@hydra.main(version_base=None, config_name="cfg")
def main(cfg):
    out = HydraConfig.get().runtime.output_dir
    own = OmegaConf.to_container(cfg)
    own["model"]["depth"] = 3  # the script changes a value after Hydra composed it
    own["exp_name"] = "ppo"
    with open(os.path.join(out, "config.json"), "w") as fh:  # Spinning Up's logger.save_config
        json.dump(own, fh)
    with open(os.path.join(out, "progress.txt"), "w") as fh:
        fh.write("Epoch\\tAverageEpRet\\tLossPi\\n")
        for e in range(cfg.epochs):
            fh.write(f"{e}\\t{10.0 * (e + 1) * cfg.lr}\\t{1.0 / (e + 1)}\\n")

if __name__ == "__main__":
    main()
'''


def _hydra(app: Path, args: list[str], cwd: Path) -> None:
    proc = subprocess.run([sys.executable, str(app), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.fixture(scope="module")
def hydra_runs(tmp_path_factory) -> dict[str, Path]:
    """A `-m` sweep (lr × seed, 4 jobs) and a single run, each written by the real Hydra."""
    pytest.importorskip("hydra")
    root = tmp_path_factory.mktemp("hydra")
    (root / "sweep_app.py").write_text(textwrap.dedent(SWEEP_APP))
    (root / "run_app.py").write_text(textwrap.dedent(RUN_APP))
    sweep = root / "multirun" / "2025-01-01" / "12-00-00"
    _hydra(root / "sweep_app.py", ["-m", "lr=0.1,0.01", "seed=0,1", f"hydra.sweep.dir={sweep}"], root)
    single = root / "outputs" / "2025-01-01" / "13-00-00"
    _hydra(root / "run_app.py", ["lr=0.5", "epochs=5", f"hydra.run.dir={single}"], root)
    return {"sweep": sweep, "single": single}


def _csv_figures(path: Path, step: str) -> dict:
    """Points and last value per column of a CSV/TSV, with the csv module."""
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t" if path.suffix == ".txt" else ","))
    keys = [k for k in rows[0] if k != step]
    return {"points": {k: sum(1 for r in rows if r[k] != "") for k in keys},
            "last": {k: float(rows[-1][k]) for k in keys}}


def _overrides(ov: list[str], keys: tuple[str, ...] | None = None) -> dict:
    """Config entries an override list sets (`+device=mps` → device), numbers as numbers."""
    out = {}
    for o in ov:
        k, v = o.lstrip("+").split("=", 1)
        if keys is None or k in keys:
            out[k] = int(v) if v.isdigit() else float(v) if v.replace(".", "", 1).isdigit() else v
    return out


def _composer_written() -> WrittenLayout:
    exp = _expected(COMPOSER)
    root = COMPOSER / "outputs"
    config = _overrides(exp["run_dirs"]["outputs"]["overrides"])
    config.update({"d_model": 64, "max_len": 16})  # every hparams.yaml (PROVENANCE)
    runs = {}
    for rel, f in exp["metric_files"].items():
        runs[os.path.relpath((COMPOSER / rel).parent, root)] = {
            "points": {k: m["points"] for k, m in f["metrics"].items()},
            "last": {k: m["last_value"] for k, m in f["metrics"].items()}, "config": config}
    return WrittenLayout(str(root), "files", runs)


def _neural_sa_written() -> WrittenLayout:
    exp = _expected(NEURAL_SA)
    f = exp["metric_files"]["outputs/outputs/es_train_log.csv"]
    config = _overrides(exp["run_dirs"]["outputs"]["overrides"],
                        ("training.n_epochs", "training.batch_size"))
    return WrittenLayout(str(NEURAL_SA), "files", {"outputs/outputs": {
        "points": {k: m["points"] for k, m in f["metrics"].items()},
        "last": {k: m["last_value"] for k, m in f["metrics"].items()}, "config": config}})


class TestHydraOverlayContract(LayoutContract):
    """The `files` layout reads these folders; the config is Hydra's (`.hydra/config.yaml`, in the
    run folder or the job folder above it), checked through the overrides the job was given."""

    layout = "files"

    @pytest.fixture(params=["composer2-lightning-version-dirs", "neural-sa-nested-outputs",
                            "hydra-1.3-multirun-written"])
    def written_layout(self, request) -> WrittenLayout:
        if request.param.startswith("composer2"):
            return _composer_written()
        if request.param.startswith("neural-sa"):
            return _neural_sa_written()
        sweep = request.getfixturevalue("hydra_runs")["sweep"]
        runs = {}
        for job in sorted(p.name for p in sweep.iterdir() if p.is_dir()):
            ov = (sweep / job / ".hydra" / "overrides.yaml").read_text().split("\n")
            ov = [line[2:] for line in ov if line.startswith("- ")]
            runs[job] = {**_csv_figures(sweep / job / "metrics.csv", "epoch"),
                         "config": {**_overrides(ov), "epochs": 6, "model.depth": 2}}
        return WrittenLayout(str(sweep), "files", runs)


def test_hydra_real_run_folders_config_overrides_and_notes():
    exp = _expected(COMPOSER)["run_dirs"]["outputs"]
    runs = _runs(COMPOSER / "outputs")
    assert sorted(runs) == ["lightning_logs/version_6", "lightning_logs/version_7",
                            "lightning_logs/version_8"]
    for run in runs.values():
        assert run.meta["hydra_overrides"] == exp["overrides"]
        assert run.meta["hydra"]["job_name"] == exp["job_name"] and run.meta["hydra"]["mode"] == exp["mode"]
        assert run.meta["hydra"]["version"] == exp["hydra_version"]
        assert "job_num" not in run.meta["hydra"]  # `???` in a single run: not a value
        notes = "\n".join(run.fidelity)
        assert ("config from ../../.hydra/config.yaml (the Hydra job folder `outputs`, 2 level(s) "
                "up); overrides: " + ", ".join(exp["overrides"])) in notes
        assert "hparams.yaml → config" in notes and "the run's own config merged over it" in notes
    exp = _expected(NEURAL_SA)["run_dirs"]["outputs"]
    run = _runs(NEURAL_SA)["outputs/outputs"]
    assert run.meta["hydra_overrides"] == exp["overrides"]
    assert run.flat_config["sa.alpha"] == "???"  # OmegaConf's missing value, kept as written
    notes = "\n".join(run.fidelity)
    assert "../.hydra/config.yaml leaves 1 value(s) missing (`???`): sa.alpha" in notes
    assert run.seed == 42  # the Hydra config's seed is the run's
    assert not any(".hydra" in r for r in runs) and not any(".hydra" in r for r in _runs(NEURAL_SA))


def test_hydra_multirun_jobs_are_the_runs_told_apart_by_their_overrides(hydra_runs, capsys):
    sweep = hydra_runs["sweep"]
    assert (sweep / "multirun.yaml").is_file()
    src = open_source(f"local:{sweep}")
    refs = {r.run_id: r for r in src.list_runs()}
    assert sorted(refs) == ["0", "1", "2", "3"]  # multirun.yaml is no run
    want = {"0": ["lr=0.1", "seed=0"], "1": ["lr=0.1", "seed=1"], "2": ["lr=0.01", "seed=0"],
            "3": ["lr=0.01", "seed=1"]}
    for job, ref in refs.items():
        run = src.load_run(ref)
        assert run.meta["hydra_overrides"] == want[job]
        assert run.meta["hydra"]["mode"] == "MULTIRUN" and run.meta["hydra"]["job_num"] == int(job)
        assert f"config from .hydra/config.yaml; overrides: {', '.join(want[job])}" in run.fidelity
        assert run.seed == int(want[job][1][-1])
        assert src.collection(ref) == f"local:{sweep}"
    # seeds of one lr are one arm (the sweep's jobs are named by number: the job name is the arm)
    assert [r.run_id for r in src.seed_siblings(refs["0"])] == ["0", "1"]
    assert [r.run_id for r in src.seed_siblings(refs["3"])] == ["2", "3"]
    assert main(["diff", str(sweep / "0"), str(sweep / "2"), "--metric", "loss", "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert {c["key"]: (c["old"], c["new"]) for c in d["config_changes"]} == {"lr": (0.1, 0.01)}
    assert d["goal"] == "min"
    assert main(["rank", str(sweep), "--metric", "loss", "--format", "json"]) == 0
    m = json.loads(capsys.readouterr().out)["metrics"][0]
    assert m["goal"] == "min" and len(m["order"]) == 2  # two arms (lr), two seeds each
    assert main(["ls", str(sweep)]) == 0
    out = capsys.readouterr().out
    assert out.count("layout: files") == 4 and "overrides: lr=0.01, seed=1" in out


def test_hydra_overlay_applies_to_any_layout_and_the_layouts_own_values_win(hydra_runs):
    single = hydra_runs["single"]
    run = _one(single)
    assert run.meta["layout"] == "spinningup"  # progress.txt + config.json
    assert run.meta["hydra_overrides"] == ["lr=0.5", "epochs=5"]
    assert run.meta["hydra"]["mode"] == "RUN"
    cfg = run.flat_config
    assert cfg["lr"] == 0.5 and cfg["epochs"] == 5 and cfg["exp_name"] == "ppo"
    assert cfg["model.depth"] == 3  # config.json (the layout's) over .hydra/config.yaml's 2
    notes = "\n".join(run.fidelity)
    assert "config.json → config" in notes
    assert "the run's own config merged over it (its values win; 1 key(s) differ from " \
           ".hydra/config.yaml: model.depth)" in notes
    assert run.point_count("AverageEpRet") == 5


def test_hydra_hostile_files_give_notes(tmp_path):
    job = tmp_path / "job"
    shutil.copytree(NEURAL_SA / "outputs", job)
    cfg = (job / ".hydra" / "config.yaml").read_bytes()
    (job / ".hydra" / "config.yaml").write_bytes(cfg[: len(cfg) // 2] + b"\n  bad: [unclosed\n")
    (job / ".hydra" / "overrides.yaml").write_text("just: a mapping\n")
    (job / ".hydra" / "hydra.yaml").write_text("a: &a [x, x, x, x, x, x, x, x, x, x]\n"
                                               + "".join(f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, "
                                                         f"*{p}, *{p}, *{p}, *{p}, *{p}]\n"
                                                         for p, c in zip("abcdefg", "bcdefgh", strict=True)))
    run = _runs(tmp_path)["job/outputs"]
    notes = "\n".join(run.fidelity)
    assert ".hydra/config.yaml: unreadable YAML" in notes
    assert ".hydra/overrides.yaml: not a list; ignored" in notes
    assert "hydra.yaml" in notes  # the alias bomb refused, said in one line
    assert run.meta["hydra_overrides"] == [] and run.point_count("TrainLoss") == 200


# -- HF Trainer: last-checkpoint/ is a snapshot of the run ------------------------------------------


def _whisper_written() -> WrittenLayout:
    exp = _expected(WHISPER)["files"]["trainer_state.json"]
    return WrittenLayout(str(WHISPER), "hf-trainer", {".": {
        "points": {k: m["points"] for k, m in exp["metrics"].items()},
        "last": {k: m["last_value"] for k, m in exp["metrics"].items()},
        "config": {"max_steps": exp["max_steps"]}}})


class TestHfLastCheckpointContract(LayoutContract):
    layout = "hf-trainer"

    @pytest.fixture
    def written_layout(self) -> WrittenLayout:
        return _whisper_written()


def test_hf_last_checkpoint_is_one_run_read_from_the_root_state(capsys):
    exp = _expected(WHISPER)["files"]
    runs = _runs(WHISPER)
    assert list(runs) == ["whisper-ja-last-checkpoint"]
    run = runs["whisper-ja-last-checkpoint"]
    assert run.meta["state_file"] == str(WHISPER / "trainer_state.json")
    assert run.status == "finished"  # the root state has the summary row the snapshot lacks
    assert run.summary["best_metric"] == exp["trainer_state.json"]["best_metric"]
    assert run.summary["train_loss"] == exp["all_results.json"]["train_loss"]
    assert run.summary["eval_runtime"] == exp["all_results.json"]["eval_runtime"]  # the 2nd evaluate()
    assert run.last_value("eval_runtime") == exp["trainer_state.json"]["metrics"]["eval_runtime"]["last_value"]
    notes = "\n".join(run.fidelity)
    assert "HF Trainer output: trainer_state.json, the last-checkpoint/ snapshot" in notes
    assert "read trainer_state.json (global_step 5000; the last-checkpoint/ snapshot of the same " \
           "run not read again)" in notes
    assert "runs/: the Trainer's TensorBoard logs of the same scalars; not read" in notes
    # a bare path: local (one run) ahead of the Git-LFS pointers under runs/ that tb would list
    assert main(["ls", str(WHISPER)]) == 0
    out = capsys.readouterr().out
    assert out.count("layout: hf-trainer") == 1 and "[tensorboard" not in out
    assert f"eval_wer: {exp['trainer_state.json']['metrics']['eval_wer']['points']} points" in out


def test_hf_snapshot_alone_is_read_when_the_root_state_is_missing(tmp_path):
    out = tmp_path / "out"
    shutil.copytree(WHISPER / "last-checkpoint", out / "last-checkpoint")
    exp = _expected(WHISPER)["files"]["last-checkpoint/trainer_state.json"]
    run = _one(out)
    assert run.status == "unknown"  # a snapshot has no final summary row
    assert run.point_count("loss") == exp["metrics"]["loss"]["points"]
    assert "HF Trainer output: no root trainer_state.json, the last-checkpoint/ snapshot" in run.fidelity[0]
    assert any("read last-checkpoint/trainer_state.json (global_step 5000)" in n for n in run.fidelity)
    claims = collect_claims(str(out))
    assert claims and claims[0].spec.name == "local"


# -- HF Trainer: checkpoint-*/ snapshots, two more sources (transformers 4.41 LLaMA-Factory, 4.4) ----

SYGOAT = HF / "sygoat-mistral-lora-llamafactory"
BART = HF / "philschmid-bart-samsum-checkpoint-500"


@pytest.mark.parametrize("source,snapshots", [(SYGOAT, ["checkpoint-500", "checkpoint-8500"]),
                                              (BART, ["checkpoint-500"])], ids=["llamafactory", "tf-4.4"])
def test_hf_checkpoint_snapshots_are_part_of_the_run(source, snapshots, capsys):
    exp = _expected(source)["files"]
    root = exp["trainer_state.json"]
    before = hash_tree(str(source))
    runs = _runs(source)
    assert len(runs) == 1  # the checkpoint-*/ states are prefixes of the root's: one run
    (run,) = runs.values()
    assert run.meta["state_file"] == str(source / "trainer_state.json")
    for key in ("loss", "learning_rate"):
        m = root["metrics"][key]
        h = run.history([key])
        assert len(h) == m["points"]
        assert (h.step.iloc[0], h.step.iloc[-1]) == (m["first_step"], m["last_step"])
        assert h.value.iloc[-1] == pytest.approx(m["last_value"])
    assert run.status == "finished"  # the root state's final summary row
    notes = "\n".join(run.fidelity)
    assert f"{len(snapshots)} checkpoint-* snapshot" in notes
    for snap in snapshots:  # each snapshot's log is a prefix of the run's: nothing is lost
        snap_lh = json.loads((source / snap / "trainer_state.json").read_text())["log_history"]
        root_lh = json.loads((source / "trainer_state.json").read_text())["log_history"]
        assert root_lh[: len(snap_lh)] == snap_lh
    assert main(["ls", str(source)]) == 0
    assert capsys.readouterr().out.count("layout: hf-trainer") == 1
    assert hash_tree(str(source)) == before


# -- a long-format table on a real folder: `phase` names the rows ---------------------------------

CURLING = REAL / "long-format" / "alivaezii-curling-cnn"


def test_long_format_phase_column_gives_one_key_per_metric_and_split():
    """Two launches appended to one table, each from epoch 1 (a script run again): two runs,
    `train_log.csv#1` (epochs 1–5) and `#2` (1–7), each with one key per split and metric."""
    exp = _expected(CURLING)["files"]["results/train_log.csv"]
    before = hash_tree(str(CURLING))
    runs = _runs(CURLING)
    assert sorted(runs) == ["results/train_log.csv#1", "results/train_log.csv#2"]
    first, second = runs["results/train_log.csv#1"], runs["results/train_log.csv#2"]
    (one, two) = exp["launches"]
    for key, m in exp["metrics"].items():  # train/loss, val/loss, val/val_macro_f1, …
        a, b = first.history([key]), second.history([key])
        assert len(a) + len(b) == m["points"], key
        assert (a.step.iloc[0], a.step.iloc[-1]) == (one["first_step"], one["last_step"])
        assert (b.step.iloc[0], b.step.iloc[-1]) == (two["first_step"], two["last_step"])
        assert b.value.iloc[-1] == pytest.approx(m["last_value"])
        both = list(a.value) + list(b.value)
        assert (min(both), max(both)) == (pytest.approx(m["min"]), pytest.approx(m["max"]))
    for run in (first, second):
        assert not {"loss", "acc", "phase", "train/phase"} & set(run.metric_keys())  # no merged splits
        assert set(run.metric_keys()) == set(exp["metrics"])
        notes = _notes(run)
        assert "long format — `phase` names the rows (train, val)" in notes
        assert "one launch of several appended to one file" in notes
        # the per-class report beside it has no step column: no history of either run, said so
        assert "test_report_thresholded.csv: no step-like column beside train_log.csv's `epoch` " \
               "→ not read as history" in notes
    report = CURLING / "results" / "test_report_thresholded.csv"
    (alone,) = _runs(report).values()  # named alone, it is read (x = row index, said)
    assert alone.metric_keys() and "x = row index" in _notes(alone)
    assert hash_tree(str(CURLING)) == before
