"""Start-up: what the commands a person waits on import, counted in a fresh interpreter.

`rundiff --help`, `adapters`, `detect PATH` and `ls --help` must import no engine
(`rundiff_core.engines*`), no dataframe or array library, and — once the entry-point cache is warm
— not `importlib.metadata` (whose scan of every installed distribution, with the `email` parser it
pulls in, was ~40% of the start). `--help` builds no subcommand's parser, so it imports no command
module; `ls --help` imports `ls` alone. These tests count imports, never time: bench/bench_startup.py
measures the start against `python -c pass`.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rundiff.agents import COMMANDS as AGENT_COMMANDS
from rundiff_core.builtins import COMMANDS as CORE_COMMANDS
from rundiff_core.demo import write_journal_run

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("pandas", "numpy", "pyarrow", "polars", "duckdb", "dask")
# What the light commands cut from the start (docs/performance.md, "Start-up"): argparse's
# terminal width without shutil (and the bz2/lzma it imports), the entry-point cache read without
# json's Python modules, the plugin modules' rules (layouts, address, walk helpers) and the
# standard-library modules they pulled in, imported by the hooks when they sniff or read.
NOT_LIGHT = ("shutil", "bz2", "lzma", "json", "zipfile", "sqlite3", "datetime", "csv", "yaml",
             "hashlib", "glob",
             "rundiff_core.layout_model", "rundiff_core.layout_meta", "rundiff_core.address",
             "rundiff_core.opening",
             "rundiff_core.redact", "rundiff_core.source", "rundiff_core.detect",
             "rundiff_adapters.wandb.layout", "rundiff_adapters.mlflow.layout",
             "rundiff_adapters.neptune.layout", "rundiff_adapters.trajectory.sniffing",
             "rundiff_adapters.local.discover", "rundiff_adapters.local.sniff",
             "rundiff_adapters.local.textlog")
# `detect` on a journal run asks every adapter once; the local adapter offers the folder to the
# layouts whose signature it matches (its final.json: lm-eval's and column-lists'), and to the
# `files` fallback, whose sniff of one-line text files needs no text-log grammar.
NOT_FOR_DETECT = ("shutil", "bz2", "lzma", "zipfile", "sqlite3", "datetime", "csv", "yaml",
                  "hashlib", "rundiff_core.redact", "rundiff_core.source",
                  "rundiff_core.layout_meta",  # metadata is read, not sniffed
                  "rundiff_adapters.local.textlog", "rundiff_adapters.local.columns",
                  "rundiff_adapters.wandb.local_runs", "rundiff_adapters.mlflow.found",
                  *(f"rundiff_adapters.local.layouts.{m}" for m in (
                      "hf_trainer", "trackio_db", "sacred", "dvclive", "raytune", "spinningup",
                      "sb3", "ultralytics", "timm", "detectron2", "mmengine",
                      "mmdet_log", "text", "hydra")))
SCAN = ("importlib.metadata", "email")  # the entry-point scan and what it imports
# rundiff's own lazily built commands: the core's, and `mcp` from the rundiff package's plugin
COMMANDS = CORE_COMMANDS + AGENT_COMMANDS
COMMAND_MODULES = {module for _name, module, _help in COMMANDS}

_PROBE = """
import contextlib, io, sys
from rundiff_core.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        code = main(sys.argv[1:])
    except SystemExit as stop:  # --help
        code = stop.code
modules = sorted(sys.modules)  # before the probe imports json to answer
import json
from rundiff_core.plugins import get_plugins
print(json.dumps({"code": code, "out": out.getvalue(), "modules": modules,
                  "discovery": get_plugins().discovery}))
"""


def _probe(*args: str, env: dict[str, str] | None = None) -> dict:
    """Run `rundiff ARGS` in a fresh interpreter; `-P` keeps the working directory (a fresh temp
    dir, whose new mtime would keep the entry-point cache from being written) off sys.path."""
    env = {**os.environ, **(env or {}), "PYTHONPATH": os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)}
    proc = subprocess.run([sys.executable, "-P", "-c", _PROBE, *args], capture_output=True,
                          text=True, env=env, cwd=str(REPO), timeout=120)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.splitlines()[-1])
    got["modules"] = set(got["modules"])
    return got


def _warm() -> None:
    """Fill the entry-point cache (RUNDIFF_CACHE_DIR is per test); a sys.path entry changed in the
    last two seconds is not cached yet, so wait for it to settle once."""
    for _ in range(3):
        _probe("plugins")  # scans, and writes the cache when the install has settled
        if "the cache" in _probe("plugins")["discovery"]:
            return
        time.sleep(2.1)
    pytest.fail("the entry-point cache was never used")


def _engines(modules: set[str]) -> set[str]:
    return {m for m in modules if m == "rundiff_core.engines" or m.startswith("rundiff_core.engines.")}


def _heavy(modules: set[str]) -> set[str]:
    return {m for m in modules if m.split(".")[0] in HEAVY}


def _scan(modules: set[str]) -> set[str]:
    return {m for m in modules if m in SCAN or m.split(".")[0] == "email"}


def _imported(modules: set[str], names: tuple[str, ...]) -> set[str]:
    """Which of `names` (modules, each with its submodules) were imported."""
    return {m for m in modules if any(m == n or m.startswith(n + ".") for n in names)}


@pytest.fixture
def journal_run(tmp_path: Path) -> Path:
    path = tmp_path / "runs" / "exp" / "seed-0"
    write_journal_run(str(path), config={"lr": 0.1}, rows=[{"step": s, "loss": 1 / (s + 1)}
                                                           for s in range(20)],
                      final={"status": "finished"}, seed=0)
    return path


@pytest.mark.parametrize("args", [("--help",), ("adapters",), ("ls", "--help")])
def test_light_commands_import_no_engine_no_heavy_library_and_no_metadata_scan(args):
    _warm()
    got = _probe(*args)
    assert got["code"] == 0 and got["out"]
    assert "the cache" in got["discovery"]
    assert _engines(got["modules"]) == set(), f"rundiff {' '.join(args)} imported engines"
    assert _heavy(got["modules"]) == set()
    assert _scan(got["modules"]) == set(), "the entry points came from the cache: no scan"
    if args == ("adapters",):  # it opens no source: no reuse scope, no address resolution
        assert "rundiff_core.resolve" not in got["modules"]
    assert _imported(got["modules"], NOT_LIGHT) == set()


@pytest.mark.parametrize("args", [("--help",), ("adapters",), ("ls", "--help")])
def test_without_third_party_plugins_no_claim_class_or_walk_is_built(args):
    """rundiff's own plugin modules import the claim classes and the bounded walk inside the hooks
    that sniff: a light command with no third-party plugin loaded (the contrib example, installed
    here, imports them at module level) imports neither."""
    _warm()
    got = _probe(*args, env={"RUNDIFF_LOAD_PLUGINS": ""})
    assert got["code"] == 0 and got["out"]
    assert _imported(got["modules"], ("rundiff_core.claims", "rundiff_core.walk",
                                      "rundiff_lightning_csv")) == set()


def test_detect_on_a_run_imports_no_engine_at_all(journal_run):
    """`detect` asks every adapter to sniff: no engine module (the seed rule of engines.arms
    loads when a run is read, not to sniff), no heavy library, no entry-point scan."""
    _warm()
    got = _probe("detect", str(journal_run))
    assert got["code"] == 0 and f"winner: journal → journal:{journal_run}" in got["out"]
    assert _engines(got["modules"]) == set(), _engines(got["modules"])
    assert _heavy(got["modules"]) == set()
    assert _scan(got["modules"]) == set()
    assert _imported(got["modules"], NOT_FOR_DETECT) == set()
    assert {"rundiff_adapters.local.shapes.files", "rundiff_adapters.local.layouts.lmeval",
            "rundiff_adapters.local.shapes.column_lists"} <= got["modules"]  # the control


@pytest.mark.parametrize("name", [name for name, _module, _help in COMMANDS])
def test_building_any_command_imports_no_engine(name):
    """`rundiff NAME --help` imports that command's module and builds its parser: engines and
    heavy libraries are imported in `run` only."""
    got = _probe(name, "--help")
    assert got["code"] == 0 and f"usage: rundiff {name}" in got["out"]
    assert _engines(got["modules"]) == set(), f"building `{name}` imported engines"
    assert _heavy(got["modules"]) == set()


def test_help_builds_no_subcommand_and_ls_help_builds_ls_alone():
    got = _probe("--help")
    commands = {m for m in got["modules"] if m.startswith("rundiff_core.commands.")}
    assert commands == set(), commands
    assert got["modules"] & COMMAND_MODULES == set()
    assert {m for m in got["modules"] if m.split(".")[0] in ("mcp", "mcp_types")} == set()
    for name, _module, help in COMMANDS:
        assert name in got["out"] and help.split()[0] in got["out"]
    got = _probe("ls", "--help")
    commands = {m for m in got["modules"] if m.startswith("rundiff_core.commands.")}
    assert commands == {"rundiff_core.commands.ls"}, commands
    assert got["modules"] & COMMAND_MODULES == {"rundiff_core.commands.ls"}


def test_the_probe_sees_imports_when_a_command_loads_histories(journal_run):
    """The control: `ls RUN` loads a history, so numpy and the engines do show up."""
    got = _probe("ls", str(journal_run))
    assert got["code"] == 0 and "loss: 20 points" in got["out"]
    assert "numpy" in _heavy(got["modules"])


# -- what the lazy command line must keep ---------------------------------------------------------
class _Recorder:
    """A host that records the help each command module gives its parser."""

    def __init__(self) -> None:
        self.helps: dict[str, str | None] = {}

    def add_parser(self, name: str, **kwargs: object) -> argparse.ArgumentParser:
        self.helps[name] = kwargs.get("help")  # type: ignore[assignment]
        kwargs.pop("help", None)
        return argparse.ArgumentParser(prog=name, **kwargs)  # type: ignore[arg-type]


def test_each_listed_help_is_the_one_its_module_gives():
    """`rundiff --help` lists COMMANDS without importing the modules: the two must agree."""
    for name, module, help in COMMANDS:
        host = _Recorder()
        importlib.import_module(module).add_parser(host)
        assert host.helps == {name: help}, module


def test_choices_spelled_out_for_the_parser_match_the_engines():
    from rundiff_core.commands import compare, diff
    from rundiff_core.engines import options

    assert compare.ALIGN_MODES == options.ALIGN_MODES
    assert diff.STATISTICS == options.STATISTICS


def test_a_lazily_built_command_is_the_eagerly_built_one():
    from rundiff_core.cli import build_parser, main

    eager = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for name, module, _help in COMMANDS:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
            main([name, "--help"])
        assert out.getvalue() == eager[name].format_help(), name
        assert eager[name].get_default("func").__module__ == module


# -- what the start-up cuts must keep -------------------------------------------------------------
def test_only_the_command_used_gets_a_parser():
    """rundiff's own commands are listed without a parser: `rundiff --help` creates the top one,
    `rundiff ls --help` that and ls's."""
    from rundiff_core.cli import _Pending, build_parser

    parser = build_parser(lazy=True)
    sub = parser._subparsers._group_actions[0]  # type: ignore[union-attr]
    names = [name for name, _module, _help in COMMANDS]
    assert all(isinstance(sub.choices[name], _Pending) for name in names)
    with contextlib.redirect_stdout(io.StringIO()) as out, pytest.raises(SystemExit):
        parser.parse_args(["ls", "--help"])
    assert out.getvalue().startswith("usage: rundiff ls")
    assert [name for name in names if not isinstance(sub.choices[name], _Pending)] == ["ls"]
    assert build_parser(lazy=True).format_help() == build_parser().format_help()


def test_detect_asks_each_adapter_once(journal_run, monkeypatch):
    """`rundiff detect PATH` lists the claims and names the winner from one round of sniffing."""
    from rundiff_core.cli import main
    from rundiff_core.plugins import get_plugins

    plugins = get_plugins()
    asked: list[str] = []
    real = plugins.call_each

    def counted(hook: str, **kwargs: object):  # noqa: ANN202
        asked.append(hook)
        return real(hook, **kwargs)

    monkeypatch.setattr(plugins, "call_each", counted)
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main(["detect", str(journal_run)]) == 0
    assert asked.count("rundiff_sniff_path") == 1
    assert f"winner: journal → journal:{journal_run}" in out.getvalue()


@pytest.mark.parametrize("columns", [None, "100", "37", "0", "-3", "wide", ""])
@pytest.mark.parametrize("terminal", [None, (120, 40), (0, 0), OSError])
def test_the_help_width_is_shutils(monkeypatch, columns, terminal):
    """argparse takes its width from `shutil.get_terminal_size()`; rundiff computes the same
    without importing shutil, with every combination of COLUMNS and a terminal (or none)."""
    import shutil

    from rundiff_core.cli import _Parser, _terminal_columns

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    monkeypatch.delenv("LINES", raising=False)

    def size(fd: int) -> os.terminal_size:
        if terminal is None or terminal is OSError:
            raise OSError("not a terminal")
        return os.terminal_size(terminal)

    monkeypatch.setattr(os, "get_terminal_size", size)
    assert _terminal_columns() == shutil.get_terminal_size().columns
    assert _Parser(prog="x")._get_formatter()._width == argparse.HelpFormatter("x")._width
    raw = _Parser(prog="x", formatter_class=argparse.RawTextHelpFormatter)._get_formatter()
    assert raw._width == argparse.RawTextHelpFormatter("x")._width


def _dataclass_twin(cls: type, frozen: bool, fields: list[tuple[str, object]]) -> type:
    """The dataclass `cls` was written out from: same name, fields and defaults."""
    import dataclasses

    spec = [(name, object, dataclasses.field(default_factory=list) if default == [] else
             dataclasses.field(default=default)) if default is not dataclasses.MISSING else
            (name, object) for name, default in fields]
    twin = dataclasses.make_dataclass(cls.__name__, spec, frozen=frozen)
    twin.__qualname__ = cls.__qualname__
    return twin


def _written_out_classes() -> list[tuple[type, bool, list[tuple[str, object]], tuple, dict]]:
    from dataclasses import MISSING

    from rundiff_adapters.local.sniff import Sniff
    from rundiff_adapters.neptune.layout import ExportGroup, Found

    from rundiff_core.detect import RankedClaim
    from rundiff_core.registry import AdapterSpec, Claim

    spec = AdapterSpec(name="a", schemes=("aa",), source="a.b:C")
    return [
        (RankedClaim, True, [("claim", MISSING), ("spec", MISSING)], (Claim("a", "why"), spec), {}),
        (ExportGroup, True, [("directory", MISSING), ("prefix", MISSING), ("parts", MISSING),
                             ("tmp_parts", 0)], ("d", "p", ("d/p_part_0.parquet",)), {}),
        (Found, False, [("exports", []), ("legacy", []), ("scale", []), ("skipped", [])], (),
         {"legacy": ["x"]}),
        (Sniff, False, [("kind", MISSING), ("header", []), ("comments", []), ("step", None),
                        ("rows_seen", 0), ("headerless", False), ("bracketed", False)], ("jsonl",),
         {"header": ["step", "loss"], "step": "step"}),
    ]


@pytest.mark.parametrize("index", range(4))
def test_classes_written_out_behave_as_the_dataclasses_they_were(index):
    """RankedClaim, neptune's ExportGroup and Found, and the local sniff's Sniff are plain classes
    now (each dataclass cost ~1 ms to create at every start): init, defaults, repr, equality,
    hashing, frozenness, copies and pickles as before."""
    import copy
    import dataclasses
    import pickle

    cls, frozen, fields, args, kwargs = _written_out_classes()[index]
    twin = _dataclass_twin(cls, frozen, fields)
    ours, theirs = cls(*args, **kwargs), twin(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    assert [getattr(ours, n) for n, _ in fields] == [getattr(theirs, n) for n, _ in fields]
    assert ours == cls(*args, **kwargs) and ours != object() and (ours == theirs) is False
    if frozen:
        assert hash(ours) == hash(theirs)
        for what in (lambda o: setattr(o, fields[0][0], 1), lambda o: delattr(o, fields[0][0]),
                     lambda o: setattr(o, "other", 1)):
            with pytest.raises(dataclasses.FrozenInstanceError):
                what(ours)
    else:
        with pytest.raises(TypeError):
            hash(ours)
        with pytest.raises(TypeError):
            hash(theirs)
        fresh, again = cls(*args), cls(*args)  # a new list per default, never a shared one
        for name, default in fields:
            if default == []:
                assert getattr(fresh, name) == [] and getattr(fresh, name) is not getattr(again, name)
    assert pickle.loads(pickle.dumps(ours)) == ours
    assert copy.deepcopy(ours) == ours and copy.copy(ours) == ours
    assert cls.__match_args__ == twin.__match_args__


def test_names_moved_out_of_a_module_are_still_found_there():
    """The classes built only when a path is read moved to modules of their own; the modules that
    held them still answer for them."""
    from rundiff_adapters.local.common import Meta
    from rundiff_adapters.mlflow import layout as mlflow_layout
    from rundiff_adapters.wandb import layout as wandb_layout

    import rundiff_core
    from rundiff_core import layouts

    for name in ("Claimed", "LayoutFolder", "LayoutMeta", "LayoutRun"):
        assert getattr(layouts, name) is getattr(rundiff_core, name)
    assert type(Meta(notes=["x"])) is rundiff_core.LayoutMeta
    assert wandb_layout.LocalRun.__name__ == "LocalRun" and wandb_layout.Segment.__name__ == "Segment"
    assert mlflow_layout.Found.__name__ == "Found"
    with pytest.raises(AttributeError):
        layouts.NoSuchName  # noqa: B018
