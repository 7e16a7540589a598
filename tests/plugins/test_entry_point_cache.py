"""The entry-point cache (rundiff_core/plugins.py `installed()`): what the scan of every installed
distribution found, replayed while no `sys.path` entry changed, and never when one did.

Installing or removing a plugin adds or removes a `*.dist-info` folder, which changes its site
directory's mtime; the fake dists here are such folders (tests/plugins/conftest.py). Fresh files
are not cached (file times are coarse), so the tests that need a warm cache age the site dir first.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from importlib import metadata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rundiff_core import plugins as plugins_module
from rundiff_core.plugins import Plugins, installed, user_cache_dir


def _age(root: Path, seconds: float = 60.0) -> None:
    """Make `root` and everything in it look `seconds` old (as an install from before), then
    wait while any other sys.path entry changed in the last seconds (a test file just written)."""
    when = time.time() - seconds
    for path in [root, *root.rglob("*")]:
        os.utime(path, (when, when))
    paths = [os.path.abspath(p or ".") for p in sys.path if isinstance(p, str)]
    for _ in range(30):
        print_ = plugins_module._fingerprint(paths)
        if print_ is not None and plugins_module._settled(print_):
            return
        time.sleep(0.1)


def _cache_file() -> Path:
    return Path(os.environ["RUNDIFF_CACHE_DIR"]) / "plugins" / "entry-points.json"


def _no_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(**_kw: object) -> None:
        raise AssertionError("importlib.metadata scanned although the cache holds")

    monkeypatch.setattr(metadata, "entry_points", refuse)


def _rows(found) -> list[tuple]:  # noqa: ANN001
    return sorted((ep.name, ep.value, ep.package, ep.version) for ep in found.entry_points)


def test_a_settled_install_is_cached_in_the_user_cache_dir_and_replayed(plugin_dir, monkeypatch):
    plugin_dir.dist("rundiff-fakefmt", "fakefmt", "fakefmt_plugin", plugin_dir.GOOD_PLUGIN, "2.3")
    _age(plugin_dir.root)
    scanned = installed()
    assert "a scan" in scanned.origin and "cached in" in scanned.origin
    assert _cache_file().is_file()
    assert str(_cache_file()).startswith(user_cache_dir())
    _no_scan(monkeypatch)
    replayed = installed()
    assert replayed.origin == f"the cache {_cache_file()}"
    assert _rows(replayed) == _rows(scanned)
    assert ("fakefmt", "fakefmt_plugin", "rundiff-fakefmt", "2.3") in _rows(replayed)
    assert replayed.rundiff_version == scanned.rundiff_version == metadata.version("rundiff")
    plugins = Plugins()  # what the plugin manager makes of the replayed entry points
    info = plugins.info["fakefmt"]
    assert (info.package, info.version, info.builtin) == ("rundiff-fakefmt", "2.3", False)
    assert plugins.registry.by_scheme("fakefmt") is not None and plugins.errors == []
    assert plugins.info["journal"].version == metadata.version("rundiff")


def test_the_replayed_entry_points_are_the_scanned_ones(plugin_dir):
    plugin_dir.dist("rundiff-fakefmt", "fakefmt", "fakefmt_plugin", plugin_dir.GOOD_PLUGIN, "2.3")
    _age(plugin_dir.root)
    installed()
    expected = sorted((ep.name, ep.value) for ep in metadata.entry_points(group="rundiff"))
    replayed = installed()
    assert "the cache" in replayed.origin
    assert sorted((ep.name, ep.value) for ep in replayed.entry_points) == expected


def test_installing_a_plugin_is_seen_at_once(plugin_dir, monkeypatch):
    _age(plugin_dir.root)
    installed()
    assert "the cache" in installed().origin
    assert "fakefmt" not in {ep.name for ep in installed().entry_points}
    plugin_dir.dist("rundiff-fakefmt", "fakefmt", "fakefmt_plugin", plugin_dir.GOOD_PLUGIN)
    found = installed()
    assert "a scan" in found.origin  # the site dir's mtime changed
    assert "fakefmt" in {ep.name for ep in found.entry_points}
    assert "fakefmt" in Plugins().info


def test_removing_a_plugin_is_seen_at_once(plugin_dir):
    plugin_dir.dist("rundiff-fakefmt", "fakefmt", "fakefmt_plugin", plugin_dir.GOOD_PLUGIN)
    _age(plugin_dir.root)
    installed()
    assert "fakefmt" in {ep.name for ep in installed().entry_points}
    assert "the cache" in installed().origin
    shutil.rmtree(plugin_dir.root / "rundiff_fakefmt-1.0.dist-info")
    found = installed()
    assert "a scan" in found.origin
    assert "fakefmt" not in {ep.name for ep in found.entry_points}
    assert "fakefmt" not in Plugins().info


def test_upgrading_a_plugin_is_seen_at_once(plugin_dir):
    plugin_dir.dist("rundiff-fakefmt", "fakefmt", "fakefmt_plugin", plugin_dir.GOOD_PLUGIN, "1.0")
    _age(plugin_dir.root)
    installed()
    assert "the cache" in installed().origin
    shutil.rmtree(plugin_dir.root / "rundiff_fakefmt-1.0.dist-info")  # what pip does
    plugin_dir.dist("rundiff-fakefmt", "fakefmt", "fakefmt_plugin", None, "1.1")
    assert Plugins().info["fakefmt"].version == "1.1"


def test_an_egg_info_rewritten_in_place_is_seen(plugin_dir):
    """setuptools' `egg_info` rewrites entry_points.txt in place, without touching the parent."""
    egg = plugin_dir.root / "rundiff_eggy.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: rundiff-eggy\nVersion: 0.1\n")
    (egg / "entry_points.txt").write_text("[rundiff]\neggy = eggy_plugin\n")
    plugin_dir.module("eggy_plugin", plugin_dir.GOOD_PLUGIN.replace("fakefmt", "eggfmt"))
    _age(plugin_dir.root)
    installed()
    assert "eggy" in {ep.name for ep in installed().entry_points}
    assert "the cache" in installed().origin
    parent = os.stat(plugin_dir.root).st_mtime_ns
    with open(egg / "entry_points.txt", "w") as fh:  # in place: same file, new content
        fh.write("[rundiff]\neggier = eggy_plugin\n")
    assert os.stat(plugin_dir.root).st_mtime_ns == parent
    assert {ep.name for ep in installed().entry_points} >= {"eggier"}
    assert "eggy" not in {ep.name for ep in installed().entry_points}


def test_an_install_of_the_last_seconds_is_not_cached(plugin_dir):
    plugin_dir.dist("rundiff-fakefmt", "fakefmt", "fakefmt_plugin", plugin_dir.GOOD_PLUGIN)
    found = installed()  # the dist-info was written just now: its time may not change again
    assert "not cached" in found.origin and "fakefmt" in {ep.name for ep in found.entry_points}
    assert "a scan" in installed().origin


def test_a_broken_cache_file_is_rescanned_and_rewritten(plugin_dir):
    _age(plugin_dir.root)
    _cache_file().parent.mkdir(parents=True, exist_ok=True)
    _cache_file().write_text("{not json")
    assert "cached in" in installed().origin
    assert json.loads(_cache_file().read_text())["format"] == plugins_module.CACHE_FORMAT
    assert "the cache" in installed().origin


def test_the_cache_can_be_turned_off(plugin_dir, monkeypatch):
    _age(plugin_dir.root)
    monkeypatch.setenv("RUNDIFF_PLUGIN_CACHE", "0")
    assert "cache off" in installed().origin
    assert "cache off" in installed().origin
    assert not _cache_file().exists()


def test_a_foreign_metadata_finder_turns_the_cache_off(plugin_dir, monkeypatch):
    class Finder:
        @staticmethod
        def find_spec(*_a: object) -> None:
            return None

        @staticmethod
        def find_distributions(*_a: object, **_k: object) -> list:
            return []

    _age(plugin_dir.root)
    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder()])
    assert "cache off" in installed().origin and not _cache_file().exists()


def test_the_importlib_metadata_backport_keeps_the_cache(plugin_dir):
    """Importing the backport swaps the standard finder for its own sys.path finder (several
    libraries do): the same distributions, so the cache stays on and stays true."""
    pytest.importorskip("importlib_metadata")
    _age(plugin_dir.root)
    installed()
    assert "the cache" in installed().origin
    plugin_dir.dist("rundiff-fakefmt", "fakefmt", "fakefmt_plugin", plugin_dir.GOOD_PLUGIN)
    assert "fakefmt" in {ep.name for ep in installed().entry_points}


def test_the_user_cache_dir_is_platformdirs_own(monkeypatch, tmp_path):
    platformdirs = pytest.importorskip("platformdirs")
    monkeypatch.delenv("RUNDIFF_CACHE_DIR")
    assert user_cache_dir() == platformdirs.user_cache_dir("rundiff")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert user_cache_dir() == platformdirs.user_cache_dir("rundiff")
    monkeypatch.setenv("RUNDIFF_CACHE_DIR", str(tmp_path / "mine"))
    assert user_cache_dir() == str(tmp_path / "mine")


def test_fresh_processes_see_an_install_and_a_removal_and_write_only_the_cache(
        plugin_dir, run_cli, tmp_path):
    """`rundiff plugins` as a user runs it, one process after another sharing one cache: the
    cache never hides a change, and nothing is written beside the runs or the plugins."""
    run = tmp_path / "runs" / "exp" / "seed-0"
    from rundiff_core.demo import write_journal_run

    write_journal_run(str(run), config={"lr": 0.1}, rows=[{"step": 0, "loss": 1.0}],
                      final={"status": "finished"}, seed=0)
    _age(plugin_dir.root)
    _age(tmp_path / "runs")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))

    def names(env: dict[str, str] | None = None) -> set[str]:
        proc = run_cli("plugins", env=env)
        assert proc.returncode == 0, proc.stderr
        return {p["name"] for p in json.loads(proc.stdout)["plugins"]}

    def traced() -> str:
        proc = run_cli("detect", str(run), env={"RUNDIFF_TRACE_PLUGINS": "1"})
        assert proc.returncode == 0, proc.stderr
        return proc.stderr

    assert "fakefmt" not in names()
    assert "rundiff entry points from the cache" in traced()
    plugin_dir.dist("rundiff-fakefmt", "fakefmt", "fakefmt_plugin", plugin_dir.GOOD_PLUGIN)
    assert "fakefmt" in names()
    assert "fakefmt" not in names({"RUNDIFF_DISABLE_PLUGINS": "fakefmt"})  # switches still apply
    assert "fakefmt" not in names({"RUNDIFF_LOAD_PLUGINS": ""})
    shutil.rmtree(plugin_dir.root / "rundiff_fakefmt-1.0.dist-info")
    assert "fakefmt" not in names()
    after = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")
                   if "__pycache__" not in p.parts and p.suffix != ".pyc")
    written = set(after) - set(before) - {Path("site") / "fakefmt_plugin.py"}
    assert written == set(), written  # the cache lives under RUNDIFF_CACHE_DIR only
    assert _cache_file().is_file()


# -- reading the cache file without the json package ----------------------------------------------
_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20)


@given(_JSON_VALUES, st.sampled_from(["", " ", "\n", " \t\r\n"]), st.booleans())
@settings(max_examples=300, deadline=None)
def test_the_cache_file_reads_as_json_loads_reads_it(value, white, indent):
    text = white + json.dumps(value, indent=2 if indent else None) + white
    assert plugins_module._json_loads(text) == json.loads(text)


@pytest.mark.parametrize("text", ["", "   ", "{not json", '{"a": 1} x', '{"a": 1}{"b": 2}', "[1, 2",
                                  "\ufeff{}", '"a\tb"', "nul", '{"a": 1,}'])
def test_text_that_json_loads_refuses_is_refused(text):
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        plugins_module._json_loads(text)


def test_reading_the_cache_imports_no_json_package(plugin_dir):
    """The entry-point cache is read by json's C scanner alone: a start that finds the cache
    valid imports none of json's Python modules (~2 ms of every start)."""
    import subprocess

    plugin_dir.dist("rundiff-fakefmt", "fakefmt", "fakefmt_plugin", plugin_dir.GOOD_PLUGIN)
    _age(plugin_dir.root)
    code = ("import sys\nfrom rundiff_core.plugins import installed\nfound = installed()\n"
            "print(found.origin)\nprint(sorted({m.split('.')[0] for m in sys.modules} & {'json'}))\n"
            "print(sorted(ep.name for ep in found.entry_points))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(plugin_dir.root), os.environ.get("PYTHONPATH", "")) if p)}

    def start() -> list[str]:
        proc = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True,
                              env=env, cwd=str(plugin_dir.root), timeout=60)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.splitlines()

    first = start()  # scans and writes the cache for this interpreter and sys.path
    assert "cached in" in first[0], first
    origin, modules, names = start()
    assert origin.startswith("the cache"), origin
    assert modules == "[]"
    assert "fakefmt" in names and names == first[2]
