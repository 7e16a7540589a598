"""The arm rules (rundiff_core/engines/arms.py) as they stand on this branch.

An arm is the run the user named plus its seed siblings, primary included once and in the
source's sibling order; a collection is grouped into arms by siblings; `siblings=False` turns
grouping off. Expectations are the directories the tests write.
"""

from __future__ import annotations

import os

import pytest

from rundiff_core.demo import write_journal_run
from rundiff_core.engines.arms import load_arm, load_arms
from rundiff_core.errors import InputError, UsageError


def _write(root, arm: str, n: int = 3) -> list[str]:
    paths = []
    for s in range(n):
        paths.append(write_journal_run(str(root / arm / f"seed-{s}"), config={"arm": arm, "seed": s},
                                       rows=[{"step": i, "loss": 1.0 + s} for i in range(3)],
                                       seed=s, final={}))
    return paths


def _dirs(arm) -> list[str]:
    return [r.address.split(":", 1)[1] for r in arm.seeds]


def test_rule_a_named_seed_brings_its_siblings_in_order_with_itself_once(tmp_path):
    paths = _write(tmp_path, "exp-a")
    for i, path in enumerate(paths):
        arm = load_arm(path)
        assert arm.address == path and _dirs(arm) == paths
        assert arm.seeds[i] is arm.primary and arm.primary.address == f"journal:{path}"
        assert arm.n == 3 and arm.name == arm.primary.name
    alone = load_arm(paths[1], siblings=False)
    assert _dirs(alone) == [paths[1]] and alone.seeds[0] is alone.primary


def test_rule_a_folder_of_seeds_is_one_arm_led_by_its_first_run(tmp_path):
    paths = _write(tmp_path, "exp-a")
    arm = load_arm(str(tmp_path / "exp-a"))
    assert arm.address == str(tmp_path / "exp-a") and _dirs(arm) == paths
    assert arm.primary is arm.seeds[0]
    (one,) = load_arms(str(tmp_path / "exp-a"))
    assert one.address == str(tmp_path / "exp-a") and _dirs(one) == paths


def test_rule_a_collection_groups_into_arms_by_siblings(tmp_path):
    a, b = _write(tmp_path, "exp-a"), _write(tmp_path, "exp-b")
    arms = load_arms(str(tmp_path))
    assert [_dirs(x) for x in arms] == [a, b]
    assert [x.address for x in arms] == [f"journal:{a[0]}", f"journal:{b[0]}"]
    assert all(x.primary is x.seeds[0] for x in arms)
    flat = load_arms(str(tmp_path), siblings=False)
    assert [_dirs(x) for x in flat] == [[p] for p in a + b]
    assert [x.address for x in flat] == [f"journal:{p}" for p in a + b]
    (single,) = load_arms(a[2])  # one run named: that run with its siblings
    assert single.address == a[2] and _dirs(single) == a and single.seeds[2] is single.primary
    (single,) = load_arms(a[2], siblings=False)
    assert _dirs(single) == [a[2]]


def test_rule_an_address_naming_no_runs_is_an_input_error(tmp_path):
    (tmp_path / "empty").mkdir()
    for load in (load_arm, load_arms):
        with pytest.raises(InputError) as err:
            load(f"journal:{tmp_path / 'empty'}")
        assert err.value.message == f"journal:{tmp_path / 'empty'} names no runs"
        assert err.value.hint == "check the path or run `rundiff ls` on it"


def test_rule_the_callers_plugin_set_is_the_one_used():
    """A source registered only in the caller's own plugin set must be found through it."""
    from rundiff_core.plugins import Plugins
    from rundiff_core.testing import memory_run, memory_source

    plugins = Plugins()
    runs = [memory_run("m", {"loss": ([0, 1], [1.0, 0.5])})]
    with memory_source(runs, name="own-plugins", plugins=plugins) as addr:
        assert load_arm(addr, plugins).primary.name == "m"
        assert [a.primary.name for a in load_arms(addr, plugins)] == ["m"]


def test_rule_a_bare_run_name_is_found_in_the_project(tmp_path, monkeypatch):
    """A name that is no path is looked up among the project's runs; two matches are an error."""
    runs = tmp_path / "proj" / "runs"
    a, b = _write(runs, "exp-a", 2), _write(runs, "exp-b", 2)
    monkeypatch.chdir(tmp_path / "proj")
    (arm,) = load_arms("exp-b/seed-1")  # unique: by its name's tail
    assert arm.primary.address == f"journal:{b[1]}" and _dirs(arm) == b
    with pytest.raises(UsageError) as err:
        load_arms("seed-1")
    assert err.value.message.startswith("'seed-1' matches 2 runs in ")
    assert f"journal:{a[1]}, journal:{b[1]}" in str(err.value)
    assert err.value.hint == "give the full address of one of them"
    with pytest.raises(InputError):
        load_arms("no-such-run")
    assert os.path.isdir(a[0])
