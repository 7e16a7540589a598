"""local: Ray Tune's `experiment_state-<date>.json` read as the experiment's trials (issue 31).

Ray is not installed here (too heavy), so every file is a real one: the Ray 2.7 state of
tests/fixtures/realworld/raytune/rllib-emecom-ray27 (one trial, beside its folder) and the
samples collected in tests/fixtures/realworld/raytune-state/<slug>/ (each with PROVENANCE.md and
a stdlib-computed expected.json). Every expected figure is computed here from the file with the
json module — never from rundiff — and damaged copies are cut or garbled from the real bytes."""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from pathlib import Path

import pytest

from rundiff_core import LayoutFolder, layouts_in_order
from rundiff_core.cli import main
from rundiff_core.resolve import open_source
from rundiff_core.testing import hash_tree

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "realworld"
RAY27 = REAL / "raytune" / "rllib-emecom-ray27"
EXP27 = RAY27 / "ray_results" / "goal_comms_gridworld" / "goal_comms_gridworld"
STATE27 = "experiment_state-2023-10-03_10-42-34.json"
T27_EMPTY = "PPO_goal_comms_gridworld_2e66a_00000_0_2023-10-03_10-42-35"
T27_OK = "PPO_goal_comms_gridworld_08bd7_00000_0_2023-10-08_14-38-58"
COLLECTED = REAL / "raytune-state"


# -- what the state file says, read with the json module alone -------------------------------------


def _blob(v) -> bool:
    return isinstance(v, dict) and v.get("_type") == "CLOUDPICKLE_FALLBACK"


def _flat(d: dict, prefix: str = "", sep: str = ".") -> dict:
    out = {}
    for k, v in d.items():
        key = f"{prefix}{sep}{k}" if prefix else str(k)
        if isinstance(v, dict) and v and not _blob(v):
            out.update(_flat(v, key, sep))
        else:
            out[key] = v
    return out


def _trials(path: Path) -> list[dict]:
    """Per trial entry: trial_id, status, config (flattened with `.`), last_result numbers
    (flattened with `/`, less config/pid/timestamp), the trial folder's name, the name Ray gives
    the trial — whatever the file's structure (pairs, JSON strings or objects)."""
    data = json.loads(path.read_text())
    entries = data.get("trial_data") or data.get("checkpoints") or []
    out = []
    for entry in entries:
        first, runtime = (entry[0], entry[1] if len(entry) > 1 else None) if isinstance(entry, list) \
            else (entry, None)
        trial = json.loads(first) if isinstance(first, str) else first
        runtime = json.loads(runtime) if isinstance(runtime, str) else (runtime or {})
        last = runtime["last_result"] if "last_result" in runtime else trial.get("last_result")
        numbers = {k: v for k, v in _flat({k: v for k, v in (last or {}).items()
                                            if k not in ("config", "pid", "timestamp")},
                                           sep="/").items()
                   if isinstance(v, int | float) and not isinstance(v, bool)}
        env = trial.get("config", {}).get("env")
        name = trial.get("custom_trial_name") or "_".join(
            [trial["trainable_name"]] + ([env] if isinstance(env, str) else []) + [trial["trial_id"]])
        logdir = trial.get("relative_logdir") or trial.get("logdir") or ""
        out.append({"trial_id": trial["trial_id"], "status": trial.get("status"),
                    "config": _flat(trial.get("config") or {}), "numbers": numbers,
                    "dirname": logdir.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1],
                    "name": name.replace("/", "_")})
    return out


def _runs(address: str) -> dict:
    src = open_source(address)
    return {ref.address: src.load_run(ref) for ref in src.list_runs()}


def _notes(run) -> str:
    run.history()
    return "\n".join(run.fidelity)


def _alone(tmp_path: Path, source: Path = EXP27 / STATE27) -> Path:
    """The state file committed without its trial folders (what people push)."""
    exp = tmp_path / "exp"
    exp.mkdir()
    shutil.copy2(source, exp / source.name)
    return exp / source.name


# -- the real Ray 2.7 state --------------------------------------------------------------------------


def test_a_state_file_alone_is_one_run_per_trial_named_as_ray_names_it(tmp_path):
    state = _alone(tmp_path)
    before = hash_tree(state.parent)
    (want,) = _trials(state)
    assert want["trial_id"] == "2e66a_00000" and want["status"] == "ERROR"  # PROVENANCE.md
    runs = _runs(f"local:{state}")
    (run,) = runs.values()
    assert run.address == f"local:{state}#{want['name']}"
    assert want["name"] == "PPO_goal_comms_gridworld_2e66a_00000"  # str(trial): trainable_env_id
    assert run.meta["layout"] == "raytune" and run.meta["trial_id"] == want["trial_id"]
    assert run.status == "crashed"  # ERROR
    assert [e.kind for e in run.events] == ["crash"]
    # config: the trial's `config`, flattened; the values Ray cloudpickled are placeholders
    pickled = {k for k, v in want["config"].items() if _blob(v)}
    assert pickled and set(run.config) == set(want["config"])
    assert {k: v for k, v in run.config.items() if k not in pickled} == \
        {k: v for k, v in want["config"].items() if k not in pickled}
    assert run.config["callbacks"] == "<pickled jtc.utils.video_callback.VideoEvaluationsCallback>"
    assert all(str(run.config[k]).startswith("<pickled ") for k in pickled)
    assert run.summary == want["numbers"] == {}  # last_result: only its trial_id
    assert run.metric_keys() == []  # no trial folder: no history
    notes = _notes(run)
    assert f"trial folder {T27_EMPTY} not present; last_result only" in notes
    assert "Ray 2.x structure (`trial_data`: [trial JSON, run-metadata JSON] pairs" in notes
    assert "trial status ERROR → status crashed" in notes
    assert "goals" not in run.meta and "tune_metric" not in run.meta  # runner_data._metric is null
    # the trial id selects it too
    (by_id,) = _runs(f"local:{state}#{want['trial_id']}").values()
    assert by_id.address == run.address
    # a folder holding only the state file lists the same run
    assert list(_runs(f"local:{state.parent}")) == [run.address]
    assert hash_tree(state.parent) == before


def test_a_state_file_beside_its_trial_folder_gives_the_folders_history_and_the_states_word(tmp_path):
    before = hash_tree(EXP27)
    (want,) = _trials(EXP27 / STATE27)
    (run,) = _runs(f"local:{EXP27 / STATE27}").values()
    assert run.address.endswith(f"#{want['name']}")
    assert run.status == "crashed"
    notes = _notes(run)
    assert f"trial folder {T27_EMPTY}/ beside the state file" in notes
    assert f"history from the trial folder {T27_EMPTY}/" in notes
    assert "result.json is empty (0 bytes)" in notes  # the folder's own reading, as today
    assert run.metric_keys() == []
    reason = (EXP27 / T27_EMPTY / "error.txt").read_text().strip().splitlines()[-1].strip()
    assert f"error.txt → status crashed: {reason}" in notes
    assert set(run.config) == set(want["config"])  # the state's config, not params.json's
    # the experiment folder lists the trial folders as before: the state adds no run for them
    refs = open_source(f"local:{EXP27}").list_runs()
    assert sorted(os.path.basename(r.address) for r in refs) == [T27_OK, T27_EMPTY]
    assert hash_tree(EXP27) == before


def test_an_experiment_folder_lists_the_trials_whose_folders_are_missing_from_the_state(tmp_path, capsys):
    exp = tmp_path / "exp"
    shutil.copytree(EXP27, exp)
    shutil.rmtree(exp / T27_EMPTY)  # committed: the state file and one trial folder
    (want,) = _trials(exp / STATE27)
    assert main(["ls", str(exp), "--format", "json"]) == 0
    listed = {r["address"]: r for r in json.loads(capsys.readouterr().out)}
    assert set(listed) == {f"local:{exp / T27_OK}", f"local:{exp / STATE27}#{want['name']}"}
    state_run = listed[f"local:{exp / STATE27}#{want['name']}"]
    assert state_run["status"] == "crashed" and state_run["points"] == 0
    assert any(f"trial folder {T27_EMPTY} not present; last_result only" in n
               for n in state_run["fidelity"])
    folder_run = listed[f"local:{exp / T27_OK}"]
    assert folder_run["points"] > 0  # the trial folder read as before


def test_a_direction_is_declared_only_when_the_state_names_metric_and_mode(tmp_path):
    state = _alone(tmp_path)
    data = json.loads(state.read_text())
    assert data["runner_data"]["_metric"] is None  # the real file declares nothing
    (run,) = _runs(f"local:{state}").values()
    assert "goals" not in run.meta
    data["runner_data"]["_metric"] = "episode_reward_mean"  # metric alone: named, no direction
    state.write_text(json.dumps(data))
    (run,) = _runs(f"local:{state}").values()
    assert "goals" not in run.meta and run.meta["tune_metric"] == "episode_reward_mean"
    assert "its mode is not in the JSON state" in "\n".join(run.fidelity)
    data["runner_data"]["_mode"] = "max"
    state.write_text(json.dumps(data))
    (run,) = _runs(f"local:{state}").values()
    goal = run.meta["goals"]["episode_reward_mean"]
    assert goal["goal"] == "max" and goal["source"].startswith("ray tune mode")
    assert "runner_data" in goal["source"]
    # a searcher's JSON state beside runner_data (`metric`/`mode`) declares it the same way
    del data["runner_data"]["_metric"], data["runner_data"]["_mode"]
    data["search_alg"] = {"metric": "loss", "mode": "min"}
    state.write_text(json.dumps(data))
    (run,) = _runs(f"local:{state}").values()
    assert run.meta["goals"]["loss"]["goal"] == "min"
    assert "search_alg" in run.meta["goals"]["loss"]["source"]


# -- damage and hostile input: one line, never a traceback -----------------------------------------


def _one_note(run, needle: str) -> str:
    hits = [n for n in run.fidelity if needle in n]
    assert len(hits) == 1, run.fidelity
    assert "\n" not in hits[0] and "Traceback" not in hits[0]
    return hits[0]


@pytest.mark.parametrize("cut", [0.05, 0.5, 0.97])
def test_a_truncated_copy_gives_a_one_line_note_and_the_trials_complete_before_the_cut(
        tmp_path, capsys, cut):
    raw = (EXP27 / STATE27).read_bytes()
    text = raw.decode()
    end_of_trials = text.index('"runner_data"')  # trial_data comes first in the file
    whole = int(len(raw) * cut) > end_of_trials
    state = tmp_path / "exp" / STATE27
    state.parent.mkdir()
    state.write_bytes(raw[: int(len(raw) * cut)])
    before = hash_tree(state.parent)
    assert main(["ls", str(state)]) == 0
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    (run,) = _runs(f"local:{state}").values()
    note = _one_note(run, "not valid JSON")
    assert "truncated or damaged" in note
    if whole:  # cut inside runner_data: the trial is read, the tuner's state is lost
        assert "the 1 `trial_data` entr(ies) complete before it read" in note
        assert run.meta["trial_id"] == "2e66a_00000" and run.status == "crashed"
    else:  # its one trial is cut
        assert "no trial read" in note and run.status == "unknown"
    assert run.metric_keys() == []
    assert hash_tree(state.parent) == before


def test_garbled_pickled_wrong_shape_and_huge_copies_give_one_line_notes(tmp_path, capsys):
    raw = (EXP27 / STATE27).read_bytes()
    cases = {
        "experiment_state-a.json": raw[:4000] + b"\x00\xff garbage }}]" + raw[4000:],
        "experiment_state-b.json": b"\x80\x05\x95" + raw[:64],  # a pickle under a .json name
        "experiment_state-c.json": b"[" * 100_000 + b"]" * 100_000,  # nested past recursion
        "experiment_state-d.json": b'{"trial_data": "not a list", "runner_data": {}}',
        "experiment_state-e.json": b"[1, 2, 3]",
        "experiment_state-f.json": b"",
    }
    exp = tmp_path / "exp"
    exp.mkdir()
    for name, body in cases.items():
        (exp / name).write_bytes(body)
    with open(exp / "experiment_state-g.json", "wb") as fh:  # over the size cap: never read
        fh.write(b'{"trial_data": [')
        fh.truncate(65 << 20)
    before = hash_tree(exp)
    needles = {"a": "not UTF-8 text", "b": "a pickle despite its .json name", "c": "nested too deeply",
               "d": "no `trial_data` or `checkpoints` list", "e": "a JSON list, not Ray Tune's",
               "f": "not valid JSON", "g": "larger than 64 MiB"}
    t0 = time.perf_counter()
    for letter, needle in needles.items():
        path = exp / f"experiment_state-{letter}.json"
        assert main(["ls", str(path)]) == 0
        out = capsys.readouterr()
        assert "Traceback" not in out.out + out.err
        (run,) = _runs(f"local:{path}").values()
        _one_note(run, needle)
        assert run.metric_keys() == [] and run.config == {}
    assert time.perf_counter() - t0 < 20
    # the folder of them: each a run saying why (no trial folders beside them)
    assert len(_runs(f"local:{exp}")) == len(needles)
    assert hash_tree(exp) == before


def test_pickled_trial_entries_are_skipped_and_counted_never_unpickled(tmp_path, monkeypatch):
    """Ray ≤ 1.x could hold a trial entry Ray itself pickled (hex `80 0x…`, base64 `gA…`, a
    `__pickled__`/`_serialized` wrapper): such entries are counted and skipped; the readable
    trial beside them is read. pickle is never called."""
    import pickle

    state = _alone(tmp_path)
    data = json.loads(state.read_text())
    real = data["trial_data"][0]
    blob_hex = pickle.dumps({"trial_id": "x"}, protocol=4).hex()
    import base64

    blob_b64 = base64.b64encode(pickle.dumps({"trial_id": "y"}, protocol=2)).decode()
    data["trial_data"] = [blob_hex, [blob_b64, "{}"], {"__pickled__": blob_b64},
                          {"_serialized": blob_hex}, real, 42]
    state.write_text(json.dumps(data))

    def refuse(*_a, **_k):
        raise AssertionError("unpickled")

    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(pickle, "load", refuse)
    (run,) = _runs(f"local:{state}").values()
    note = _one_note(run, "pickled entr(ies) skipped")
    assert "4 pickled entr(ies) skipped (never unpickled)" in note
    assert "1 entr(ies) neither a trial object nor its JSON skipped" in note
    assert run.meta["trial_id"] == "2e66a_00000"


def test_a_trial_nested_past_the_recursion_limit_is_a_note(tmp_path):
    state = _alone(tmp_path)
    data = json.loads(state.read_text())
    trial = json.loads(data["trial_data"][0][0])
    deep = '{"a": ' * 950 + "1" + "}" * 950  # parses, but deeper than flattening may recurse
    raw = json.dumps({k: v for k, v in trial.items() if k != "config"})[:-1] + f', "config": {deep}}}'
    data["trial_data"][0][0] = raw
    state.write_text(json.dumps(data))
    (run,) = _runs(f"local:{state}").values()  # refused in one note: never a traceback
    _one_note(run, "1 entr(ies) nested too deeply to read skipped")
    assert run.config == {} and run.metric_keys() == []


def test_the_claim_reads_state_files_once_and_never_claims_a_trial_folder_twice(tmp_path):
    module = layouts_in_order().module("raytune")
    exp = tmp_path / "exp"
    shutil.copytree(EXP27, exp)
    view = LayoutFolder(str(exp), sorted(os.listdir(exp)), [T27_OK, T27_EMPTY])
    assert module.claim(view) is None  # both trials' folders are here: they claim themselves
    shutil.rmtree(exp / T27_EMPTY)
    got = module.claim(LayoutFolder(str(exp), sorted(f for f in os.listdir(exp)
                                                     if (exp / f).is_file()), [T27_OK]))
    assert got is not None and [r.path.rsplit("#", 1)[1] for r in got.runs] == [
        "PPO_goal_comms_gridworld_2e66a_00000"]
    assert got.consumed == set()  # the trial folders beside it are walked as before
    assert module.claim_file(str(exp / "result.json")) is None


# -- the collected real samples ---------------------------------------------------------------------
#
# tests/fixtures/realworld/raytune-state/<slug>/: PROVENANCE.md, LICENSE and expected.json (written by
# make_expected.py with the json module alone). rl-experiments-ray08: RLlib's own Ray ~0.8 benchmark states
# (`checkpoints` of trial objects, no trial folders); rllib-emecom-ray27-launches: two Ray 2.7 launches
# (`trial_data` pairs), one whose trial folder lives in ../raytune/rllib-emecom-ray27, one PENDING trial whose
# folder holds only error.txt.

RAY08 = COLLECTED / "rl-experiments-ray08"
PPO08 = RAY08 / "atari-ppo" / "2018-09" / "experiment_state-2020-01-20_12-49-38.json"
APEX08 = RAY08 / "atari-apex" / "new-dqn-with-exploration-api-no-per-worker" / \
    "experiment_state-2020-01-31_13-29-58.json"
LAUNCHES = COLLECTED / "rllib-emecom-ray27-launches"
EXP_LAUNCHES = LAUNCHES / "ray_results" / "goal_comms_gridworld" / "goal_comms_gridworld"
STATE_08BD7 = EXP_LAUNCHES / "experiment_state-2023-10-08_14-38-58.json"
STATE_1D1B2 = EXP_LAUNCHES / "experiment_state-2023-10-08_17-02-43.json"


def _expected(sample: Path, state: Path) -> dict:
    data = json.loads((sample / "expected.json").read_text())
    return data["state_files"][str(state.relative_to(sample))]


def _by_trial(address: str) -> dict:
    return {run.meta["trial_id"]: run for run in _runs(address).values()}


def test_ray08_trial_objects_committed_without_their_folders():
    before = hash_tree(RAY08)
    want = _expected(RAY08, PPO08)
    assert want["structure"] == {"key": "checkpoints", "entries": ["object"]}
    runs = _by_trial(f"local:{PPO08}")
    assert set(runs) == {t["trial_id"] for t in want["trials"]}
    status = {"TERMINATED": "finished", "ERROR": "crashed", "RUNNING": "running", "PENDING": "unknown"}
    for t in want["trials"]:
        run = runs[t["trial_id"]]
        assert run.address == f"local:{PPO08}#{t['name']}"
        assert run.status == status[t["status"]]
        assert len(run.config) == t["config_keys"]
        assert run.metric_keys() == []  # no trial folder: last_result only
        notes = _notes(run)
        assert "Ray ≤ 0.8 structure (`checkpoints`: trial objects" in notes
        assert (f"trial folder {t['dirname']} not present; last_result only" in notes if t["dirname"]
                else "no trial folder named in the state (the trial had not started)" in notes)
        # last_result: every plain number, and the numpy float32 scalars Ray pickled, by their bytes
        for k, v in t["last_result_numbers"].items():
            assert run.summary[k] == v
        for k, v in t["last_result_pickled"].items():
            assert run.summary[k] == pytest.approx(v, rel=1e-6)
        assert set(run.summary) == set(t["last_result_numbers"]) | set(t["last_result_pickled"])
    breakout = runs["51f92a76"]
    assert breakout.summary["episode_reward_mean"] == 178.69 and breakout.summary["training_iteration"] == 3718
    assert "numpy scalar read as its number ×6" in _notes(breakout)
    assert breakout.config["env"] == "BreakoutNoFrameskip-v4" and breakout.config["lambda"] == 0.95
    assert [e.kind for e in breakout.events] == ["crash"] and breakout.events[0].step == 3718
    assert "goals" not in breakout.meta  # runner_data names no metric
    # the Qbert/SpaceInvaders trials never started: PENDING, no logdir, empty last_result
    assert runs["51fd967e"].summary == {} and runs["51fd967e"].status == "unknown"
    assert hash_tree(RAY08) == before


def test_ray08_absolute_logdirs_from_another_machine_name_the_missing_folders(capsys):
    want = _expected(RAY08, APEX08)
    assert main(["ls", str(APEX08), "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r["address"].rsplit("#", 1)[1] for r in listed] == sorted(t["name"] for t in want["trials"])
    for r in listed:
        t = next(t for t in want["trials"] if r["address"].endswith("#" + t["name"]))
        assert t["dirname"].startswith(t["name"] + "_")  # from /home/ubuntu/ray_results/apex/…
        assert any(f"trial folder {t['dirname']} not present; last_result only" in n for n in r["fidelity"])
        assert r["status"] == "unknown" and r["points"] == 0  # PENDING


def _launch_08bd7(tmp_path: Path) -> Path:
    """The Ray 2.7 launch of trial 08bd7 as Ray left it: its state file beside its trial folder."""
    exp = tmp_path / "goal_comms_gridworld"
    exp.mkdir()
    shutil.copy2(STATE_08BD7, exp / STATE_08BD7.name)
    shutil.copytree(EXP27 / T27_OK, exp / T27_OK)
    return exp


def test_a_ray27_state_beside_its_trial_folder_gives_that_folders_history(tmp_path):
    exp = _launch_08bd7(tmp_path)
    (want,) = _expected(LAUNCHES, STATE_08BD7)["trials"]
    folder = json.loads((RAY27 / "expected.json").read_text())["trials"][str((EXP27 / T27_OK).relative_to(RAY27))]
    (run,) = _runs(f"local:{exp / STATE_08BD7.name}").values()
    assert run.address.endswith("#" + want["name"]) and want["dirname"] == T27_OK
    assert run.status == "crashed"  # ERROR, and error.txt
    # history: the trial folder's result.json, every row
    assert run.point_count("timesteps_total") == folder["result_rows"] == 9
    assert run.last_step("timesteps_total") == folder["last_step"]
    assert run.last_value("timesteps_total") == folder["last_timesteps_total"]
    # summary: the state's last_result (the same iteration as result.json's last row)
    for k, v in want["last_result_numbers"].items():
        assert run.summary[k] == v
    assert run.summary["training_iteration"] == folder["last_step"]
    assert len(run.config) == want["config_keys"]
    notes = _notes(run)
    assert f"trial folder {T27_OK}/ beside the state file: its history" in notes
    assert "the state's last_result is at" not in notes  # same iteration: nothing to say
    # a listing of the folder: the trial folder is the run (as before), the state adds no second one
    assert [os.path.basename(r.address) for r in open_source(f"local:{exp}").list_runs()] == [T27_OK]


def test_rank_a_state_file_through_the_cli(tmp_path, capsys):
    exp = _launch_08bd7(tmp_path)
    (want,) = _expected(LAUNCHES, STATE_08BD7)["trials"]
    state = exp / STATE_08BD7.name
    assert main(["rank", str(state), "--metric", "episode_reward_mean", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    m = out["metrics"][0]
    assert m["metric"] == "episode_reward_mean" and m["step"] == 9
    (point,) = [p for g in m["order"] for p in g["points"]]
    assert point["run_id"].endswith("#" + want["name"])
    assert point["value"] == pytest.approx(want["last_result_numbers"]["episode_reward_mean"])
    assert m["direction"]["source"] == "vocabulary"  # the state declares no mode
    # the state file alone (no trial folder): listed with its last_result, nothing to rank
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy2(STATE_08BD7, alone / STATE_08BD7.name)
    assert main(["ls", str(alone / STATE_08BD7.name), "--format", "json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert listed["points"] == 0 and listed["status"] == "crashed"
    assert any(f"trial folder {T27_OK} not present; last_result only" in n for n in listed["fidelity"])
    (run,) = _runs(f"local:{alone / STATE_08BD7.name}").values()
    assert run.summary["episode_reward_mean"] == want["last_result_numbers"]["episode_reward_mean"]


def test_a_pending_trial_whose_folder_holds_only_error_txt_is_crashed(tmp_path):
    before = hash_tree(LAUNCHES)
    (want,) = _expected(LAUNCHES, STATE_1D1B2)["trials"]
    assert want["status"] == "PENDING" and want["last_result_numbers"] == {}
    (run,) = _runs(f"local:{STATE_1D1B2}").values()
    assert run.address.endswith("#" + want["name"])
    reason = (EXP_LAUNCHES / want["dirname"] / "error.txt").read_text().strip().splitlines()[-1].strip()
    assert reason.startswith("RuntimeError: split_with_sizes")
    assert run.status == "crashed" and run.events[0].payload["reason"] == reason
    assert run.metric_keys() == []
    notes = _notes(run)
    assert f"trial folder {want['dirname']}/ beside the state file holds neither result.json" in notes
    assert "trial status PENDING → status crashed" in notes
    # listed from its folder: the trial folder is not a trial of its own (no params.json, no
    # result.json), so the state's run is the one listed
    assert sorted(r.address for r in open_source(f"local:{EXP_LAUNCHES}").list_runs()) == [
        f"local:{STATE_08BD7}#PPO_goal_comms_gridworld_08bd7_00000", f"local:{STATE_1D1B2}#{want['name']}"]
    assert hash_tree(LAUNCHES) == before


def _samples() -> list[Path]:
    if not COLLECTED.is_dir():
        return []
    return sorted(p for d in COLLECTED.iterdir() if d.is_dir() for p in d.rglob("experiment_state-*.json"))


@pytest.mark.parametrize("state", _samples(), ids=lambda p: f"{p.relative_to(COLLECTED).parts[0]}/{p.name}")
def test_every_collected_state_file_reads_each_trial_as_the_json_says(state):
    before = hash_tree(state.parent)
    want = {t["trial_id"]: t for t in _trials(state)}
    runs = _runs(f"local:{state}")
    assert len(runs) == len(want)
    status = {"TERMINATED": "finished", "ERROR": "crashed", "RUNNING": "running"}
    for run in runs.values():
        t = want[run.meta["trial_id"]]
        assert run.address.endswith("#" + t["name"]) or run.address.endswith("#" + t["trial_id"])
        assert run.status == status.get(t["status"], "unknown") or (
            (state.parent / t["dirname"] / "error.txt").is_file() and run.status == "crashed")
        plain = {k: v for k, v in t["config"].items() if not _blob(v)}
        assert {k: run.config[k] for k in plain} == plain
        for k, v in t["numbers"].items():
            assert run.summary[k] == v or (math.isnan(v) and math.isnan(run.summary[k]))
        folder = state.parent / t["dirname"] if t["dirname"] else None
        notes = _notes(run)
        if folder and folder.is_dir():
            assert f"history from the trial folder {t['dirname']}/" in notes
        else:
            assert "last_result only" in notes and run.metric_keys() == []
    assert hash_tree(state.parent) == before
