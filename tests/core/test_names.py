"""The naming rule (docs/names.md) on real folders of eight sources and five backends: runs by
their tracker's name or their path below the runs' common folder, arms by their own folder,
their run's name or the few parameters that tell them apart — never an address, an absolute
path, an object repr, `+N more` or `(absent)`, and never longer than 40 characters."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rundiff_core.engines.arms import arms_of, parameters
from rundiff_core.engines.naming import NAME_MAX, fit, place, run_names
from rundiff_core.engines.runset import load_sources
from rundiff_core.model import Run
from rundiff_core.opening import reuse_loads

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "realworld"
_BAD = re.compile(r"0x[0-9a-f]{4,}|\+\d+ more|\(absent\)|^/|[a-z]+:/")


def _arms(address: str):
    with reuse_loads():
        runs = load_sources([address], progress=False)
        return runs, arms_of(runs)


def _readable(runs, arms) -> None:
    names = [r.name for r in runs]
    labels = [a.label for a in arms]
    for text in [*names, *labels, *(a.differs for a in arms)]:
        assert len(text) <= NAME_MAX or text in (a.differs for a in arms), text
        assert not _BAD.search(text), text
    assert len(set(labels)) == len(labels), labels
    assert len({r.name for r in runs}) == len({r.address for r in runs}), names


def test_spinningup_arms_are_their_algorithm_folders(realdata):
    runs, arms = _arms(str(realdata / "spinningup-rainbow-pg"))
    _readable(runs, arms)
    assert sorted(a.label for a in arms) == ["DDPG/Hopper-v2", "PPO/Hopper-v2", "TD3/Hopper-v2"]
    assert "TD3/Hopper-v2/td3_s2521" in {r.name for r in runs}
    assert all(d and "0x" not in d for d in (a.differs for a in arms))


def test_wandb_runs_carry_their_display_names(realdata):
    runs, arms = _arms(str(realdata / "wandb-official-compat-logs"))
    _readable(runs, arms)
    assert {"new_auto_steps", "old_auto_steps"} <= {r.name for r in runs}
    assert not any("offline-run" in r.name for r in runs)


def test_mlflow_runs_carry_their_run_names_and_what_they_differ_by(realdata):
    runs, arms = _arms(str(realdata / "mlflow-aiops-mnist" / "mlruns"))
    _readable(runs, arms)
    assert {"amusing-smelt-908", "bright-elk-944"} <= {r.name for r in runs}
    by_label = {a.label: a.differs for a in arms}
    assert by_label["amusing-smelt-908"] == "epochs=10, lr=0.02"


def test_lightning_versions_and_tensorboard_groups(realdata):
    runs, arms = _arms(str(realdata / "mlflow-aiops-mnist" / "lightning_logs"))
    _readable(runs, arms)
    assert {r.name for r in runs} >= {"version_0", "version_1"}
    runs, arms = _arms(str(realdata / "tb-tensorboard-reducer"))
    _readable(runs, arms)
    assert {r.name for r in runs} >= {"strict/run_1", "lax/run_2", "duplicate_steps/run_3"}


def test_sacred_sb3_and_inspect_runs(realdata):
    for folder, expect in (("sacred-pymarl-messy-smac", {"1", "2"}),
                           ("sb3-insper-dqn-a2c", {"a2c-cartpole", "dqn-breakout"}),
                           ("agent-inspect-ai", set())):
        runs, arms = _arms(str(realdata / folder))
        _readable(runs, arms)
        assert expect <= {r.name for r in runs}, folder
    # an Inspect eval is its task run by its model; two of one name told apart by their files
    names = [r.name for r in runs if r.adapter == "trajectory"]
    assert any(n.startswith("popularity ") for n in names) and len(set(names)) == len(names)


def test_runs_within_a_store_and_yolo_runs_below_their_common_folder():
    runs, arms = _arms(str(FIXTURES / "yolov5-old"))
    _readable(runs, arms)
    # long paths: the fewest last parts that tell the runs apart (YOLO's own `exp1`, `exp4`)
    assert {r.name for r in runs} == {"exp", "exp1", "exp2", "exp4", "exp5"}
    runs, arms = _arms(str(FIXTURES / "optuna"))
    _readable(runs, arms)
    assert any(r.name.endswith("optuna.db#ensemble/0") for r in runs)


def _run(address: str, name: str, **config) -> Run:
    return Run(address=address, name=name, run_id=name.rsplit("/", 1)[-1], adapter="local",
               config=config)


def test_path_names_are_relative_to_the_common_folder_and_fit():
    runs = [_run("local:/data/exp/a/seed-0", "/data/exp/a/seed-0"),
            _run("local:/data/exp/b/seed-0", "exp/b/seed-0")]  # relative: its place's tail
    assert run_names(runs) == ["a/seed-0", "b/seed-0"]
    long = [_run(f"local:/x/{'very-long-experiment-name-' * 2}{i}/seed-0", "p") for i in (1, 2)]
    long = [_run(r.address, r.address.split(":", 1)[1]) for r in long]
    names = run_names(long)
    # one run per folder: the folder names it, shortened in its middle to fit
    assert all(len(n) <= NAME_MAX for n in names) and [n[-2:] for n in names] == ["-1", "-2"]
    assert fit("imagenet-resnet50-distill-from-vit-l/seed-0") == "imagenet-resnet5…still-from-vit-l/seed-0"
    assert place("local:/a/log.txt#Subject 1") == ("a", "log.txt#Subject 1")
    assert place("wandb:entity/project/abc") is None


def test_tracker_names_are_kept_and_told_apart_when_shared():
    runs = [_run("mlflow:/s/mlruns#aaaa1111", "lr-sweep"), _run("mlflow:/s/mlruns#bbbb2222", "lr-sweep"),
            _run("mlflow:/s/mlruns#cccc3333", "baseline")]
    names = run_names(runs)
    assert names[2] == "baseline" and len(set(names)) == 3 and all("lr-sweep [" in n for n in names[:2])


def test_non_parameters_are_one_rule_for_grouping_and_display():
    run = _run("local:/exp/ppo_s1", "ppo_s1", lr=0.1, env_fn="<function f at 0x7f01>",
               opt="<torch.optim.SGD object at 0x7f02>", started="2024-01-02 10:11:12",
               output_dir="/exp/ppo_s1", _wandb={"cli_version": "0.16"})
    params, hidden = parameters(run)
    assert params == {"lr": 0.1, "opt": "torch.optim.SGD"}
    assert set(hidden) == {"env_fn", "started", "output_dir", "_wandb.cli_version"}


@pytest.mark.parametrize("layout", ["spinningup-rainbow-pg"])
def test_diff_counts_the_hidden_values_instead_of_listing_them(realdata, layout, capsys):
    from rundiff_core.cli import main

    data = realdata / layout / "data"
    a, b = data / "TD3/Hopper-v2/td3_s2521", data / "PPO/Hopper-v2/ppo_s7932"
    assert main(["diff", str(a), str(b), "--metric", "AverageEpRet"]) == 0
    out = capsys.readouterr().out
    assert "non-parameter values hidden" in out and "0x" not in out and str(realdata) not in \
        out.split("\n", 3)[-1]
    assert main(["diff", str(a), str(b), "--metric", "AverageEpRet", "--all-keys"]) == 0
    assert "env_fn" in capsys.readouterr().out


def test_rank_and_compare_of_the_top_folder_name_the_algorithms(realdata, capsys):
    """The issue's scene: `rank` and `compare` on `spinningup-rainbow-pg` (a folder of three
    stores deeper down) name the arms by their folders."""
    import json

    from rundiff_core.cli import main

    want = {"DDPG/Hopper-v2", "PPO/Hopper-v2", "TD3/Hopper-v2"}
    folder = str(realdata / "spinningup-rainbow-pg")
    assert main(["rank", folder, "--format", "json"]) == 0
    assert {a["label"] for a in json.loads(capsys.readouterr().out)["arms"]} == want
    assert main(["compare", folder, "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert {a["label"] for a in [d["student"], *d["baselines"]]} == want


def test_long_values_are_cut_where_the_runs_differ():
    """Scene-Graph-Benchmark's two configs (wild tree sak-18) name their datasets
    `VG_stanford_filtered_with_attribute_*` and `…_wth_attribute_*`: a cut keeping the shared start
    would label both `["VG_stanford_f…`; the cut keeps where they differ."""
    from rundiff_core.engines.naming import VALUE_MAX, short_value

    a, b = ["VG_stanford_filtered_with_attribute_test"], ["VG_stanford_filtered_wth_attribute_test"]
    sa, sb = short_value(a, [b]), short_value(b, [a])
    assert sa != sb and "with" in sa and "wth" in sb
    assert len(sa) <= VALUE_MAX and len(sb) <= VALUE_MAX
    assert short_value("resnet50_pretrained_imagenet_v2", ["resnet50_pretrained_imagenet_v1"]) \
        .endswith("_v2")
    # differing early (or alone) keeps the start, as before
    assert short_value("/home/kaihua/checkpoints/model.pth", [None]).startswith("/home/kaihua")
    assert short_value("adamw", ["sgd"]) == "adamw"
    root = Path(__file__).resolve().parents[1] / "fixtures" / "wild" / \
        "sak-18-scene-graph-generator-checkpoints" / "tree"
    import contextlib
    import io

    from rundiff_core.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["rank", str(root), "--metric", "loss"]) == 0
    rows = [ln for ln in out.getvalue().splitlines() if ln.startswith("| ") and "log.txt" in ln]
    configs = {ln.split("|")[2].strip(): ln.split("|")[3].strip() for ln in rows}
    assert configs["pretrained_faster_rcnn/log.txt"] != configs["log.txt"], configs
