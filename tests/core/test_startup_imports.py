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
SCAN = ("importlib.metadata", "email")  # the entry-point scan and what it imports
# rundiff's own lazily built commands: the core's, and `mcp` from the rundiff package's plugin
COMMANDS = CORE_COMMANDS + AGENT_COMMANDS
COMMAND_MODULES = {module for _name, module, _help in COMMANDS}

_PROBE = """
import contextlib, io, json, sys
from rundiff_core.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        code = main(sys.argv[1:])
    except SystemExit as stop:  # --help
        code = stop.code
from rundiff_core.plugins import get_plugins
print(json.dumps({"code": code, "out": out.getvalue(), "modules": sorted(sys.modules),
                  "discovery": get_plugins().discovery}))
"""


def _probe(*args: str) -> dict:
    """Run `rundiff ARGS` in a fresh interpreter; `-P` keeps the working directory (a fresh temp
    dir, whose new mtime would keep the entry-point cache from being written) off sys.path."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
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


def test_detect_on_a_run_imports_no_engine_at_all(journal_run):
    """`detect` asks every adapter to sniff: no engine module (the seed rule of engines.arms
    loads when a run is read, not to sniff), no heavy library, no entry-point scan."""
    _warm()
    got = _probe("detect", str(journal_run))
    assert got["code"] == 0 and f"winner: journal → journal:{journal_run}" in got["out"]
    assert _engines(got["modules"]) == set(), _engines(got["modules"])
    assert _heavy(got["modules"]) == set()
    assert _scan(got["modules"]) == set()


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
