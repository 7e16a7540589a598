"""Throwaway plugins for the plugin-layer tests: modules on sys.path and fake installed dists.

A fake distribution is a real `NAME-VERSION.dist-info` folder (METADATA + entry_points.txt) in a
temp dir on sys.path, so `importlib.metadata` finds its `rundiff` entry point exactly as it finds
a pip-installed package's. Subprocess tests put the same dir on PYTHONPATH.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RUNDIFF_ENV = ("RUNDIFF_LOAD_PLUGINS", "RUNDIFF_DISABLE_PLUGINS", "RUNDIFF_TRACE_PLUGINS")


# Plugin module sources shared by several tests ---------------------------------------------------
GOOD_PLUGIN = '''
from rundiff_core.hookspecs import hookimpl
from rundiff_core.registry import AdapterSpec, Claim


@hookimpl
def rundiff_register_adapters(register):
    register(AdapterSpec(name="fakefmt", schemes=("fakefmt",), priority=80,
                         source="fakefmt_source:FakeSource", summary="*.fake files"))


@hookimpl
def rundiff_sniff_path(path):
    if path.endswith(".fake"):
        return Claim("fakefmt", "a .fake file")
    return None
'''

TYPO_PLUGIN = '''
from rundiff_core.hookspecs import hookimpl
from rundiff_core.registry import AdapterSpec


@hookimpl
def rundiff_register_adapters(register):
    register(AdapterSpec(name="typo", schemes=("typo",), source="x:Y"))


@hookimpl
def rundiff_sniff_paths(path):
    return None
'''

TAKEN_SCHEME_PLUGIN = '''
from rundiff_core.hookspecs import hookimpl
from rundiff_core.registry import AdapterSpec


@hookimpl
def rundiff_register_adapters(register):
    register(AdapterSpec(name="grabby_ok", schemes=("grabby",), source="x:Y"))
    register(AdapterSpec(name="grabby", schemes=("journal",), source="x:Y"))
'''

BROKEN_IMPORT_PLUGIN = '''
import rundiff_surely_missing_dependency  # noqa: F401
'''


class PluginDir:
    """A temp dir on sys.path where tests write plugin modules and fake dists."""

    GOOD_PLUGIN = GOOD_PLUGIN
    TYPO_PLUGIN = TYPO_PLUGIN
    TAKEN_SCHEME_PLUGIN = TAKEN_SCHEME_PLUGIN
    BROKEN_IMPORT_PLUGIN = BROKEN_IMPORT_PLUGIN

    def __init__(self, root: Path) -> None:
        self.root = root
        self.modules: list[str] = []

    def module(self, name: str, source: str) -> str:
        """Write `name.py`; returns the module name."""
        (self.root / f"{name}.py").write_text(textwrap.dedent(source))
        self.modules.append(name)
        return name

    def dist(self, dist: str, entry_point: str, module: str, source: str | None = None,
             version: str = "1.0") -> None:
        """A fake installed distribution `dist` whose `rundiff` entry point loads `module`."""
        if source is not None:
            self.module(module, source)
        info = self.root / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
        (info / "entry_points.txt").write_text(f"[rundiff]\n{entry_point} = {module}\n")


@pytest.fixture
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PluginDir]:
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    for var in RUNDIFF_ENV:
        monkeypatch.delenv(var, raising=False)
    pd = PluginDir(root)
    yield pd
    for name in pd.modules:
        sys.modules.pop(name, None)


@pytest.fixture
def run_cli(plugin_dir: PluginDir) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run `python -m rundiff_core ARGS` in a fresh process that sees the fake dists."""

    def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        full = {k: v for k, v in os.environ.items() if k not in RUNDIFF_ENV}
        full["PYTHONPATH"] = os.pathsep.join([str(plugin_dir.root), full.get("PYTHONPATH", "")])
        full.update(env or {})
        return subprocess.run([sys.executable, "-m", "rundiff_core", *args], capture_output=True,
                              text=True, env=full, cwd=str(plugin_dir.root), timeout=120)

    return run
