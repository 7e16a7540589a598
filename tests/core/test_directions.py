"""Directions are known, declared or asked (rundiff_core/engines/directions.py): the documented
vocabulary on a name's tokens, what a run's framework or tracker declares, the user's --goal and
rundiff.toml — and where none tells, no best, better, worse, verdict or winner anywhere."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rundiff_core.cli import main
from rundiff_core.demo import write_journal_run
from rundiff_core.engines.diff import VERDICT_UNKNOWN
from rundiff_core.engines.directions import (
    HIGHER,
    LOWER,
    GoalRules,
    declared_in_config,
    goal_rules,
    tokens,
    vocabulary,
    vocabulary_markdown,
)
from rundiff_core.errors import UsageError
from rundiff_core.model import Run

DOCS = Path(__file__).resolve().parents[2] / "docs" / "directions.md"


@pytest.mark.parametrize("name, goal", [
    # the issue's own examples, on the tokens of the name
    ("metrics/mAP50-95(B)", "max"), ("eval_wer", "min"), ("val/ngram_3", None),
    ("time/total_timesteps", None), ("epoch", None), ("lr", None),
    # one name per vocabulary entry
    ("val_acc", "max"), ("eval/accuracy", "max"), ("bbox/AP50", "max"), ("bbox/APs", "max"),
    ("precision", "max"), ("recall@1", "max"), ("f1", "max"), ("roc_auc", "max"), ("auroc", "max"),
    ("mIoU", "max"), ("dice", "max"), ("sacrebleu", "max"), ("rougeLsum", "max"), ("chrf++", "max"),
    ("exact_match,strict-match", "max"), ("pass@1,create_test", "max"), ("win_rate", "max"),
    ("rollout/ep_rew_mean", "max"), ("AverageEpRet", "max"), ("score", "max"),
    ("success_rate", "max"), ("ndcg@10", "max"), ("mrr", "max"), ("hit@5", "max"), ("top5", "max"),
    ("val/r2", "max"), ("correct", "max"),
    ("train/loss", "min"), ("top1_err", "min"), ("cer", "min"), ("val_ppl", "min"),
    ("perplexity", "min"), ("nll", "min"), ("rmse", "min"), ("fid", "min"), ("kl", "min"),
    ("ece", "min"), ("latency_ms", "min"), ("bpb", "min"), ("cum_regret", "min"),
    # what has no direction, and what names none
    ("acc_stderr,none", None), ("reward_std", None), ("loss_scale", None), ("x/lr0", None),
    ("learning_rate", None), ("train_samples_per_second", None), ("hp_metric", None),
    ("grad_norm", None), ("ClipFrac", None), ("DeltaLossPi", None),
    # a negated error (scikit-learn) is maximised
    ("neg_mean_squared_error", "max"),
])
def test_vocabulary_on_tokens(name, goal):
    d = vocabulary(name)
    assert d.goal == goal, (name, d)
    assert (d.source == "vocabulary") == (goal is not None)


def test_tokens_split_separators_camel_case_and_keep_map_and_at_k_whole():
    assert tokens("metrics/mAP50-95(B)") == ["metrics", "map50", "95", "b"]
    assert tokens("AverageEpRet") == ["averageepret", "average", "ep", "ret"]
    assert "pass@1" in tokens("pass@1,none") and "none" in tokens("pass@1,none")


def test_every_vocabulary_entry_is_exercised():
    """Each row of the table has a name above that hits it (a new row needs its example)."""
    names = [p[0] for p in test_vocabulary_on_tokens.pytestmark[0].args[1]]
    for table in (HIGHER, LOWER):
        for pattern, what in table:
            hit = [n for n in names if vocabulary(n).goal and f"({what})" in vocabulary(n).reason]
            assert hit, (pattern, what)


def test_the_docs_table_is_the_code_table():
    text = DOCS.read_text()
    assert vocabulary_markdown() in text, "regenerate docs/directions.md from vocabulary_markdown()"


def _run(config: dict | None = None, meta: dict | None = None, name: str = "r") -> Run:
    return Run(address=f"memory:{name}", name=name, run_id=name, adapter="memory",
               config=config or {}, meta=meta or {})


@pytest.mark.parametrize("config, metric, goal, says", [
    ({"metric_for_best_model": "eval_f1", "greater_is_better": False}, "eval_f1", "min", "HF Trainer"),
    ({"args": {"metric_for_best_model": "loss", "greater_is_better": "false"}}, "eval/loss", "min",
     "greater_is_better=False"),
    ({"metric_for_best_model": "ngram_3"}, "eval_ngram_3", "max", "greater_is_better unset"),
    ({"callbacks": [{"class_path": "ModelCheckpoint",
                     "init_args": {"monitor": "val/ngram_3", "mode": "max"}}]},
     "val/ngram_3", "max", "monitor='val/ngram_3'"),
    ({"tune": {"metric": "episode_len", "mode": "min"}}, "episode_len", "min", "tuner"),
    ({"sweep": {"metric": {"name": "val/score", "goal": "minimize"}}}, "val/score", "min", "W&B sweep"),
])
def test_a_declared_direction_wins_over_the_vocabulary(config, metric, goal, says):
    d = GoalRules().direction(metric, [_run(config)])
    assert (d.goal, d.source) == (goal, "declared") and says in d.reason


def test_an_adapter_declares_directions_in_meta_and_disagreeing_runs_declare_nothing():
    lm = {"goals": {"arc/acc_norm,none": {"goal": "max", "source": "lm-eval higher_is_better"}}}
    d = GoalRules().direction("arc/acc_norm,none", [_run(meta=lm)])
    assert (d.goal, d.reason) == ("max", "lm-eval higher_is_better")
    a = _run({"monitor": "val/x", "mode": "max"}, name="a")
    b = _run({"monitor": "val/x", "mode": "min"}, name="b")
    d = GoalRules().direction("val/x", [a, b])
    assert d.goal is None and "opposite" in d.reason
    assert declared_in_config({"metric": "loss"}) == []  # a metric without a mode declares nothing


def test_the_user_wins_over_what_runs_declare(tmp_path):
    declared = [_run({"monitor": "val/x", "mode": "max"})]
    assert GoalRules(cli={"val/*": "min"}).direction("val/x", declared).source == "--goal"
    toml = tmp_path / "rundiff.toml"
    toml.write_text('[goals]\n"val/*" = "min"\n')
    rules = goal_rules([], str(toml))
    d = rules.direction("val/x", declared)
    assert (d.goal, d.source) == ("min", "rundiff.toml")
    assert goal_rules(["val/x=max"], str(toml)).direction("val/x").goal == "max"  # cli first
    assert goal_rules("max").direction("train/loss").goal == "max"  # a bare --goal: every metric
    with pytest.raises(UsageError):
        goal_rules(["val/x=up"])
    toml.write_text('[goals]\n"val/*" = "up"\n')
    with pytest.raises(Exception, match=r"\[goals\]"):
        goal_rules([], str(toml))


# -- no claim anywhere for an unknown direction ---------------------------------------------------
CLAIMS = re.compile(r"\bbetter\b|\bworse\b|\bleads\b|\bahead\b|\bbehind\b|\bbest\b[^\n]*\bfoo\b"
                    r"|\bfoo\b[^\n]*\bbest\b|goal: (min|max)|(?<!no )\bwinner\b", re.I)


@pytest.fixture(scope="module")
def arms(tmp_path_factory):
    """Two arms of three seeds whose `foo` differs far outside 2σ — a name with no direction."""
    root = tmp_path_factory.mktemp("unknown")
    for arm, base in (("exp-a", 1.0), ("exp-b", 5.0)):
        for s in range(3):
            rows = [{"step": i, "foo": base + 0.01 * i + 0.001 * s} for i in range(40)]
            write_journal_run(str(root / arm / f"seed-{s}"), config={"width": base, "seed": s},
                              rows=rows, seed=s, final={})
    return root


def _cli(capsys, *argv):
    capsys.readouterr()
    code = main(list(argv))
    return code, capsys.readouterr().out


def _lines_about_foo(text: str) -> str:
    """The text, minus the lines that only say the direction is unknown or show plain numbers."""
    return "\n".join(line for line in text.splitlines()
                     if "direction unknown" not in line.lower() and "untestable" not in line
                     and "lower is better, ↑ higher" not in line)  # compare's legend


def test_no_command_claims_better_or_worse_on_an_unknown_direction(arms, capsys):
    a, b = str(arms / "exp-a" / "seed-0"), str(arms / "exp-b" / "seed-0")
    code, out = _cli(capsys, "diff", a, b, "--metric", "foo")
    assert code == 0 and out.rstrip().endswith(VERDICT_UNKNOWN)
    assert "direction unknown for foo: pass --goal foo=max or min" in out
    d = json.loads(_cli(capsys, "diff", a, b, "--metric", "foo", "--format", "json")[1])
    assert d["goal"] is None and d["verdict"] == VERDICT_UNKNOWN and d["outside_2sigma"] is True
    assert d["headline_a"]["best"] is None  # no best without a direction
    # with a direction the same data gives a verdict: the test could fail
    d = json.loads(_cli(capsys, "diff", a, b, "--metric", "foo", "--goal", "foo=min",
                        "--format", "json")[1])
    assert d["verdict"].startswith("A clearly better")

    for argv in (["compare", str(arms / "exp-a"), str(arms / "exp-b"), "--metric", "foo"],
                 ["rank", str(arms), "--metric", "foo"],
                 ["ablate", "--baseline", a, str(arms / "exp-b"), "--metric", "foo"],
                 ["report", str(arms), "--metric", "foo"],
                 ["watch", str(arms), "--once", "--baseline", a]):
        code, out = _cli(capsys, *argv)
        assert code in (0, 1), (argv, out)
        assert not CLAIMS.search(_lines_about_foo(out)), (argv[0], CLAIMS.search(_lines_about_foo(out)), out)
        if argv[0] in ("compare", "rank", "report"):
            assert "direction unknown" in out.lower(), (argv[0], out)
        js = json.loads(_cli(capsys, *argv, "--format", "json")[1])
        text = json.dumps(js)
        assert '"student_better": true' not in text and '"student_better": false' not in text
        assert '"improves": true' not in text and '"improves": false' not in text
        if argv[0] == "rank":
            assert js["metrics"][0]["best"] is None and js["metrics"][0]["top_group"] == []
            assert js["most_efficient"] is None
        if argv[0] == "report":
            assert js["best"] is None and not any("leads" in f["text"] for f in js["findings"])


def test_the_api_and_mcp_claim_nothing_either(arms):
    import rundiff
    from rundiff.agents.confine import Confinement
    from rundiff.agents.tools import Tools

    a, b = str(arms / "exp-a" / "seed-0"), str(arms / "exp-b" / "seed-0")
    assert rundiff.diff(a, b, metric="foo").verdict == VERDICT_UNKNOWN
    assert rundiff.diff(a, b, metric="foo", goal={"foo": "min"}).verdict.startswith("A clearly")
    ranked = rundiff.rank(str(arms), metric="foo").to_dict()
    assert ranked["metrics"][0]["best"] is None
    tools = Tools(Confinement.of([str(arms)]))
    answer = tools.rank([str(arms)], metric="foo")
    assert not answer.error and "direction unknown" in answer.text.lower()
    assert not CLAIMS.search(_lines_about_foo(answer.text))
    answer = tools.diff(a, b, metric="foo", goal={"foo": "max"})
    assert not answer.error and answer.data["verdict"].startswith("B clearly better")
