"""Which metrics a report shows: natural order, globs, families, headline metrics."""

from __future__ import annotations

from rundiff_core.engines.selection import (
    expand,
    families,
    headline,
    main_metric,
    natural_sorted,
)


def test_natural_order_puts_2_before_10():
    names = ["val/ngram_10", "val/ngram_2", "val/ngram_1", "val/ngram_100", "train/loss"]
    assert natural_sorted(names) == ["train/loss", "val/ngram_1", "val/ngram_2", "val/ngram_10",
                                     "val/ngram_100"]


def test_globs_expand_against_logged_keys_in_natural_order():
    logged = ["val/ngram_10", "val/ngram_2", "train/loss", "val/loss"]
    names, unmatched = expand(["val/ngram_*", "train/loss", "nope/*"], logged)
    assert names == ["val/ngram_2", "val/ngram_10", "train/loss"] and unmatched == ["nope/*"]


def test_families_by_number_and_by_inner_segment():
    names = ([f"val/ngram_{n}" for n in range(1, 6)] + [f"Eval/{n}/episodic_return" for n in (0, 5, 10)]
             + ["test/cifar/acc", "test/svhn/acc", "test/mnist/acc", "train/loss", "val/loss"])
    fams = families(names)
    assert fams["val/ngram_<n>"] == [f"val/ngram_{n}" for n in range(1, 6)]
    assert fams["Eval/<n>/episodic_return"] == ["Eval/0/episodic_return", "Eval/5/episodic_return",
                                                "Eval/10/episodic_return"]
    assert fams["test/*/acc"] == ["test/cifar/acc", "test/mnist/acc", "test/svhn/acc"]
    assert not any("loss" in p for p in fams)  # two losses are not a family
    assert families(["a_1", "a_2"]) == {}  # below the minimum of three


def test_headline_keeps_everything_that_fits_else_the_main_metrics():
    few = ["train/loss", "train/kl", "val/acc"]
    assert headline(few) == ["train/kl", "train/loss", "val/acc"]
    many = [f"train/stat_{c}" for c in "abcdefghij"] + ["train/loss", "val/reward", "train/entropy"]
    shown = headline(many, declared=["train/stat_c"])
    assert "train/loss" in shown and "val/reward" in shown and "train/stat_c" in shown
    assert "train/stat_a" not in shown and len(shown) <= 8


def test_main_metric_prefers_loss_then_the_training_loss():
    assert main_metric(["acc", "loss", "train/loss"]) == "loss"
    assert main_metric(["val/ngram_1", "val/loss", "train/loss", "lr"]) == "train/loss"
    assert main_metric(["eval/accuracy", "lr"]) == "eval/accuracy"
    assert main_metric(["lr", "grad_norm"]) is None


def test_main_metric_reads_camel_case_words():
    """Spinning Up's columns: `AverageEpRet` is a return (a main word), `LossPi` a loss among
    others — a two-run diff leads with the return, as rank does, instead of asking for `loss`."""
    from rundiff_core.engines.selection import main_metric

    names = ["AverageEpRet", "AverageTestEpRet", "EpLen", "LossPi", "LossQ", "MaxEpRet", "Time"]
    assert main_metric(names) == "AverageEpRet"
    assert main_metric(["valLoss", "valAcc"]) == "valLoss"
