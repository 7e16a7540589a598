"""A third party adds a folder layout to `local:` through `rundiff_register_layouts` — no adapter
of its own — and the contract kit tests it like a built-in (rundiff_core.layouts)."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from rundiff_core import LayoutSpec, layouts_in_order
from rundiff_core.cli import main
from rundiff_core.hookspecs import hookimpl
from rundiff_core.testing import LayoutContract, WrittenLayout, registered_plugin

LAYOUT_MODULE = '''
"""A toy framework: `toy_log.txt` lines `step loss`, beside `toy_args.json`."""
import json, os
import rundiff_core
from rundiff_core import Claimed, LayoutMeta, LayoutRun

DIRECTIONS = {"toy/score": "max"}

def claim(folder):
    if not folder.has("toy_log.txt", "toy_args.json"):
        return None
    return Claimed([LayoutRun(folder.path, "toy", [folder.join("toy_log.txt")], "toy_log.txt + toy_args.json")])

def meta(run):
    with open(os.path.join(run.path, "toy_args.json")) as fh:
        config = json.load(fh)
    return LayoutMeta(config=config, notes=["toy_args.json → config"], goals={"toy/score": "max"},
                      goal_sources={"toy/score": "the toy framework"})

def history(run):
    steps, keys, values = [], [], []
    for line in open(run.files[0]):
        s, loss, score = line.split()
        steps += [float(s)] * 2
        keys += ["loss", "toy/score"]
        values += [float(loss), float(score)]
    frame = rundiff_core.make_history(steps, keys, values)
    frame.attrs["key_files"] = {"loss": "toy_log.txt", "toy/score": "toy_log.txt"}
    return frame, ["toy_log.txt: x = step"]
'''


@pytest.fixture
def toy_module(tmp_path, monkeypatch):
    pkg = tmp_path / "toy_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "layout.py").write_text(textwrap.dedent(LAYOUT_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "toy_pkg.layout"
    for name in [m for m in sys.modules if m.startswith("toy_pkg")]:
        del sys.modules[name]


class ToyPlugin:
    @hookimpl
    def rundiff_register_layouts(self, register):
        register(LayoutSpec("toy", "toy_pkg.layout", "`toy_log.txt` beside `toy_args.json`",
                            priority=300, one_run="the folder"))


def _write_toy(folder, lr: float) -> None:
    folder.mkdir(parents=True)
    (folder / "toy_args.json").write_text(json.dumps({"lr": lr, "seed": 0}))
    (folder / "toy_log.txt").write_text("".join(f"{s} {2 - s / 10} {s / 20}\n" for s in range(10)))


def test_a_plugin_layout_is_read_by_local_and_declares_its_directions(toy_module, tmp_path, capsys):
    _write_toy(tmp_path / "runs" / "a", 0.1)
    _write_toy(tmp_path / "runs" / "b", 0.2)
    with registered_plugin(ToyPlugin(), "toy-plugin"):
        specs = layouts_in_order().ordered()
        names = [s.name for s in specs]
        at = names.index("toy")  # by priority, between built-ins
        assert all(s.priority < 300 for s in specs[:at]) and specs[at + 1].priority > 300
        assert main(["ls", str(tmp_path / "runs")]) == 0
        out = capsys.readouterr().out
        assert out.count("layout: toy") == 2 and "toy/score: 10 points" in out
        assert main(["rank", str(tmp_path / "runs"), "--metric", "toy/score", "--format", "json"]) == 0
        d = json.loads(capsys.readouterr().out)
        m = d["metrics"][0]
        assert m["goal"] == "max" and m["direction"]["source"] == "declared"
        assert m["direction"]["reason"] == "the toy framework"
    assert layouts_in_order().get("toy") is None  # gone with the plugin


def test_a_layout_name_registered_twice_drops_the_plugin():
    class Twice:
        @hookimpl
        def rundiff_register_layouts(self, register):
            register(LayoutSpec("files", "x.y", "clash"))

    from rundiff_core.testing import get_plugins

    plugins = get_plugins()
    assert not plugins.add(Twice(), name="twice", package="twice")
    assert any("layout 'files' is registered by 'local' and 'twice'" in e for e in plugins.errors)
    assert layouts_in_order().get("files").builtin and "twice" not in plugins.info


class TestToyLayoutContract(LayoutContract):
    """The contract kit on the plugin's layout, with figures counted from the written file."""

    layout = "toy"

    @pytest.fixture(autouse=True)
    def _plugin(self, toy_module):
        with registered_plugin(ToyPlugin(), "toy-plugin"):
            yield

    @pytest.fixture
    def written_layout(self, tmp_path):
        _write_toy(tmp_path / "run", 0.1)
        return WrittenLayout(str(tmp_path / "run"), "toy", runs={".": {
            "points": {"loss": 10, "toy/score": 10}, "last": {"loss": 1.1, "toy/score": 0.45},
            "config": {"lr": 0.1}, "goals": {"toy/score": "max"}}})
