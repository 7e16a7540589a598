"""The building blocks of compare: slicing extensions, metric-name normalisation, proxy/downstream."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

from rundiff_core.engines.align import (
    axis_from_key,
    dedupe_last,
    first_decrease,
    relative_wall_time,
    slice_at,
    values_at,
)
from rundiff_core.engines.metricnames import (
    parse_maps,
    resolve_names,
    spelling_key,
    synonym_key,
    tokens,
)
from rundiff_core.engines.roles import (
    HEURISTIC,
    GroupRules,
    build_rules,
    classify,
    find_project_file,
)
from rundiff_core.errors import InputError, MetricNotFoundError, UsageError


# ---- align -------------------------------------------------------------------------------------
def test_strict_start_does_not_borrow_a_point_from_the_future():
    x, y = [500, 1000], [0.4, 0.6]
    assert slice_at(x, y, 11).method == "nearest"  # the old behaviour stays the default
    s = slice_at(x, y, 11, strict_start=True)
    assert s.method == "not started" and math.isnan(s.value) and s.x_used == 500 and not s.reached


@pytest.mark.parametrize("mode", ["nearest", "interpolate"])
def test_values_at_matches_slice_at_point_by_point(mode):
    rng = np.random.default_rng(3)
    x = np.sort(rng.choice(np.arange(0, 1000), 60, replace=False)).astype(float)
    y = rng.normal(size=60)
    targets = np.concatenate([rng.uniform(-50, 1050, 200), x[:5]])
    got = values_at(x, y, targets, mode, strict_start=True)
    for t, v in zip(targets, got, strict=True):
        s = slice_at(x, y, t, mode, strict_start=True)
        assert (math.isnan(v) and not s.reached) or v == pytest.approx(s.value)


def test_slice_indices_point_at_the_points_used():
    xs, ys = dedupe_last([0, 10, 20], [1.0, 2.0, 3.0])
    assert slice_at(xs, ys, 12).indices == (1,)
    assert slice_at(xs, ys, 12, "interpolate").indices == (1, 2)


def test_axis_from_key_interpolates_inside_and_is_nan_outside():
    steps = np.array([0.0, 50.0, 100.0, 150.0])
    tokens_seen = np.array([0.0, 1e6, 2e6, 3e6])
    got = axis_from_key(np.array([50.0, 75.0, 200.0, -1.0]), steps, tokens_seen)
    assert got[0] == 1e6 and got[1] == 1.5e6 and math.isnan(got[2]) and math.isnan(got[3])
    assert first_decrease(steps, tokens_seen) is None
    assert first_decrease(steps, np.array([0.0, 1.0, 0.5, 2.0])) == 100.0


def test_relative_wall_time():
    assert relative_wall_time(np.array([10.0, 12.0, np.nan, 15.0])).tolist()[:2] == [0.0, 2.0]
    assert np.isnan(relative_wall_time(np.array([np.nan, np.nan]))).all()


# ---- metric names -------------------------------------------------------------------------------
def test_equivalent_spellings():
    assert spelling_key("train/loss") == spelling_key("train_loss") == spelling_key("loss/train")
    assert spelling_key("TrainLoss") == spelling_key("train.loss")
    assert spelling_key("train/loss") != spelling_key("eval/loss")
    assert synonym_key("val_acc") == synonym_key("validation/accuracy")
    assert synonym_key("learning_rate") == synonym_key("lr")
    assert tokens("top_1_acc") == ("top1", "acc")


def test_unambiguous_names_merge_and_say_so():
    res = resolve_names({"A": ["train/loss", "val/acc"], "B": ["train_loss", "validation_accuracy"],
                         "C": ["loss/train", "val_acc"]}, prefer="A")
    assert res.metrics == ["train/loss", "val/acc"]
    assert res.keys["val/acc"] == {"A": "val/acc", "B": "validation_accuracy", "C": "val_acc"}
    tiers = {(m.run, m.key): m.tier for m in res.mapped}
    assert tiers == {("B", "train_loss"): "spelling", ("C", "loss/train"): "spelling",
                     ("B", "validation_accuracy"): "synonym", ("C", "val_acc"): "spelling"}


def test_ambiguous_names_are_not_merged_only_suggested():
    res = resolve_names({"A": ["train/loss", "train_loss"], "B": ["loss/train"]})
    assert res.metrics == []  # nothing is shared without a choice
    assert any("not merged" in s and "--map" in s for s in res.suggestions)
    res = resolve_names({"A": ["train/loss", "train_loss"], "B": ["loss/train"]},
                        maps={"loss/train": "train/loss"})
    assert res.metrics == ["train/loss"] and res.keys["train/loss"]["B"] == "loss/train"


def test_looser_matches_are_suggested_never_applied():
    res = resolve_names({"A": ["loss", "acc"], "B": ["train/loss", "acc"]})
    assert res.metrics == ["acc"]
    assert any("--map" in s and "train/loss" in s for s in res.suggestions)


def test_wanted_metric_lookup_and_not_found():
    res = resolve_names({"A": ["train/loss"], "B": ["train_loss"], "C": ["other"]}, ["train/loss"])
    assert res.keys["train/loss"] == {"A": "train/loss", "B": "train_loss"}
    assert res.partial == {"train/loss": ["C"]}
    with pytest.raises(MetricNotFoundError) as err:
        resolve_names({"A": ["train/loss"]}, ["eval/acc"])
    assert "train/loss" in err.value.hint


def test_maps_parse_and_conflicts():
    assert parse_maps(["a=b", " c = d "]) == {"a": "b", "c": "d"}
    with pytest.raises(UsageError):
        parse_maps(["nope"])
    with pytest.raises(UsageError, match="both"):
        resolve_names({"A": ["x", "y"]}, maps={"x": "y"})


# ---- groups -------------------------------------------------------------------------------------
@pytest.mark.parametrize("metric, group", [
    ("loss", "proxy"), ("train/loss", "proxy"), ("eval/loss", "proxy"), ("perplexity", "proxy"),
    ("knn_top1", "proxy"), ("eval/knn_acc", "proxy"), ("online_probe/acc", "proxy"),
    ("eval/accuracy", "downstream"), ("test/f1", "downstream"), ("downstream/cifar10", "downstream"),
    ("linear_probe_acc", "downstream"), ("finetune/top1", "downstream"), ("mmlu", "downstream"),
    ("lr", "diagnostic"), ("grad_norm", "diagnostic"), ("train/epoch", "diagnostic"),
    ("samples_per_second", "diagnostic"), ("accuracy", "proxy"), ("val/acc", "proxy"),
])
def test_heuristic(metric, group):
    assert classify(metric).group == group


def test_command_line_beats_project_file_beats_heuristic(tmp_path):
    toml = tmp_path / "rundiff.toml"
    toml.write_text('[groups]\ndownstream = ["val/*"]\nproxy = ["eval/cheap_*"]\n')
    rules = build_rules(project_file=str(toml))
    assert rules.classify("val/acc").group == "downstream"
    assert rules.classify("eval/cheap_score").source == str(toml)
    assert rules.classify("eval/cheap_score").group == "proxy"
    rules = build_rules(proxy=["val/acc"], project_file=str(toml))
    d = rules.classify("val/acc")
    assert (d.group, d.source, d.reason) == ("proxy", "command line", "--proxy 'val/acc'")
    assert rules.explicit_names() == ["val/acc"]
    # patterns also match the keys runs logged a metric under
    assert GroupRules(cli={"downstream": ["lin_*"]}).classify("probe", ["lin_probe"]).group == "downstream"


def test_project_file_is_found_upwards_but_not_past_the_repo_root(tmp_path):
    (tmp_path / "rundiff.toml").write_text("[groups]\n")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "sub").mkdir()
    assert find_project_file(str(repo / "sub")) is None
    (repo / "rundiff.toml").write_text("[groups]\n")
    assert find_project_file(str(repo / "sub")) == str(repo / "rundiff.toml")


@pytest.mark.parametrize("text", ["[groups\n", "[groups]\nwinners = ['x']\n", "groups = 3\n",
                                  "[groups]\nproxy = [1]\n"])
def test_bad_project_files_are_input_errors(tmp_path, text):
    f = tmp_path / "rundiff.toml"
    f.write_text(text)
    with pytest.raises(InputError):
        build_rules(project_file=str(f))


def test_docs_show_every_heuristic_rule():
    doc = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "compare.md")
    with open(doc, encoding="utf-8") as fh:
        text = fh.read()
    for rule in HEURISTIC:
        assert rule.why in text, f"docs/compare.md does not document: {rule.why}"
