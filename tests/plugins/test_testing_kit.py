"""The test kit itself: in-memory sources, the history comparison, and a contract that bites."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from rundiff_core.cli import main
from rundiff_core.errors import RunNotFoundError
from rundiff_core.model import RunRef, make_history
from rundiff_core.resolve import load_run, load_runs
from rundiff_core.testing import (
    InMemorySource,
    assert_history_equal,
    hash_tree,
    memory_run,
    memory_source,
)


def _arm(name: str, offset: float):
    steps = list(range(0, 100, 10))
    return memory_run(name, {"loss": (steps, [1.0 / (s + 1) + offset for s in steps])},
                      config={"lr": 0.1 + offset}, summary={"loss": offset})


def test_in_memory_source_lists_loads_and_refuses_unknown_ids():
    run = _arm("a", 0.0)
    src = InMemorySource([run])
    [ref] = src.list_runs()
    assert src.load_run(ref) is run
    assert len(src.load_history(ref, ["loss"])) == 10
    with pytest.raises(RunNotFoundError):
        src.load_run(RunRef("nope", "memory:nope"))


def test_memory_source_reaches_engines_through_addresses(isolated_plugins, capsys):
    with memory_source([_arm("a", 0.0)], "a", isolated_plugins) as addr_a, \
            memory_source([_arm("b", 0.5)], "b", isolated_plugins) as addr_b:
        assert (addr_a, addr_b) == ("memory:a", "memory:b")
        assert load_run(addr_a).name == "a" and len(load_runs(addr_b)) == 1
        assert main(["diff", addr_a, addr_b, "--metric", "loss", "--format", "json"]) == 0
        diff = json.loads(capsys.readouterr().out)
        assert "lr" in json.dumps(diff)
    assert isolated_plugins.registry.by_scheme("memory") is None  # removed again
    with pytest.raises(Exception, match="unknown scheme 'memory:'"):
        load_run("memory:a")


def test_assert_history_equal_catches_each_kind_of_difference():
    base = make_history([0, 1, 1], ["x", "x", "x"], [1.0, float("nan"), 3.0], [10.0, 11.0, 12.0])
    assert_history_equal(base, base.iloc[::-1])  # order-insensitive by default
    with pytest.raises(AssertionError, match="point count"):
        assert_history_equal(base.iloc[:2], base)
    with pytest.raises(AssertionError, match="value differs"):
        assert_history_equal(make_history([0, 1, 1], ["x"] * 3, [1.0, 2.0, 3.0], [10.0, 11.0, 12.0]),
                             base)
    with pytest.raises(AssertionError, match="wall_time differs"):
        assert_history_equal(make_history([0, 1, 1], ["x"] * 3, [1.0, float("nan"), 3.0]), base)
    assert_history_equal(make_history([0, 1, 1], ["x"] * 3, [1.0, float("nan"), 3.0]), base,
                         check_wall_time=False)
    with pytest.raises(AssertionError):
        assert_history_equal(base.iloc[::-1], base, ordered=True)


def test_hash_tree_sees_content_and_new_files(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f.txt").write_text("one")
    before = hash_tree(tmp_path)
    assert hash_tree(tmp_path) == before
    (tmp_path / "a" / "f.txt").write_text("two")
    assert hash_tree(tmp_path) != before
    changed = hash_tree(tmp_path)
    (tmp_path / "a" / "cache").mkdir()
    assert hash_tree(tmp_path) != changed


SLOPPY_PLUGIN = '''
from rundiff_core.hookspecs import hookimpl
from rundiff_core.registry import AdapterSpec, Claim


@hookimpl
def rundiff_register_adapters(register):
    register(AdapterSpec("sloppy", ("sloppy",), "sloppy_source:SloppySource", priority=90))


@hookimpl
def rundiff_sniff_path(path):
    return Claim("sloppy", "has run.sloppy") if path.endswith("run") else None
'''

SLOPPY_SOURCE = '''
import os
from rundiff_core.errors import RunNotFoundError
from rundiff_core.model import Run, RunRef, make_history
from rundiff_core.source import BaseSource


class SloppySource(BaseSource):
    """Samples every other point, writes a cache into the run, and crashes on bad input."""

    def list_runs(self):
        return [RunRef("run", "sloppy:" + self.address.locator)]

    def load_run(self, ref):
        if ref.run_id != "run":
            raise RunNotFoundError("no such run")
        return self.bind(Run(ref.address, "run", "run", "sloppy"), ref)

    def load_history(self, ref, keys=None):
        path = os.path.join(self.address.locator, "run.sloppy")
        rows = [line.split(",") for line in open(path).read().splitlines()]
        steps = [float(r[0]) for r in rows]  # ValueError on a cut line: a traceback
        open(os.path.join(self.address.locator, ".cache"), "w").write("x")
        return make_history(steps[::2], ["loss"] * len(steps[::2]), [float(r[1]) for r in rows][::2])
'''

SLOPPY_TEST = '''
import pytest
from rundiff_core.model import make_history
from rundiff_core.testing import AdapterContract, WrittenRun


class TestSloppy(AdapterContract):
    adapter = "sloppy"

    @pytest.fixture
    def written_run(self, tmp_path):
        run = tmp_path / "run"
        run.mkdir()
        (run / "run.sloppy").write_text("".join(f"{s},{1 / (s + 1)}\\n" for s in range(10)))
        expected = make_history(range(10), ["loss"] * 10, [1 / (s + 1) for s in range(10)])
        return WrittenRun(path=str(run), address=f"sloppy:{run}", history=expected,
                          check_wall_time=False)

    @pytest.fixture
    def corrupt_run(self, tmp_path):
        run = tmp_path / "run"
        run.mkdir()
        (run / "run.sloppy").write_text("0,1.0\\n1,0.5\\n2")
        return f"sloppy:{run}"
'''


def test_the_contract_fails_a_sloppy_adapter(tmp_path):
    """Run the contract on an adapter that samples, writes and crashes: those tests must fail."""
    for name, text in {"sloppy_plugin.py": SLOPPY_PLUGIN, "sloppy_source.py": SLOPPY_SOURCE,
                       "test_sloppy.py": SLOPPY_TEST}.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    (tmp_path / "conftest.py").write_text(textwrap.dedent('''
        import sloppy_plugin
        from rundiff_core.plugins import get_plugins

        pytest_plugins = ["rundiff_core.testing"]
        assert get_plugins().add(sloppy_plugin, name="sloppy")
    '''))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path),
                                                                   os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf", str(tmp_path)],
        capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=300,
    )
    failed = {line.split("::")[-1].split(" ")[0] for line in proc.stdout.splitlines()
              if line.startswith("FAILED")}
    assert failed == {
        "test_history_has_every_point",  # every other point dropped
        "test_history_keys_subset",  # same, for one key
        "test_read_only",  # wrote .cache into the run
        "test_corrupt_input_is_typed_or_counted",  # ValueError traceback
    }, proc.stdout[-3000:]
    assert "4 failed, 7 passed" in proc.stdout  # sniffing, listing, ids, foreign paths, arm hooks are fine
