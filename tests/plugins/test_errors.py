"""A broken plugin gets one line naming it and the fix; every other plugin keeps working."""

from __future__ import annotations

import json

import pytest

from rundiff_core.demo import write_journal_run
from rundiff_core.detect import collect_claims, sniff_path
from rundiff_core.errors import MissingDependencyError
from rundiff_core.hookspecs import hookimpl
from rundiff_core.plugins import Plugins
from rundiff_core.registry import AdapterSpec, Claim
from rundiff_core.resolve import open_source
from rundiff_core.testing import registered_plugin


@pytest.fixture
def journal_run(tmp_path) -> str:
    return write_journal_run(str(tmp_path / "run"), config={"lr": 1},
                             rows=[{"step": 0, "loss": 1.0}, {"step": 1, "loss": 0.5}])


def _only_error(plugins: Plugins, name: str) -> str:
    errors = [e for e in plugins.errors if f"'{name}'" in e]
    assert len(errors) == 1, plugins.errors
    assert "\n" not in errors[0]
    return errors[0]


def _others_still_work(plugins: Plugins, journal_run: str) -> None:
    assert sniff_path(journal_run, plugins).spec.name == "journal"
    assert open_source(f"journal:{journal_run}", plugins).list_runs()


def test_misspelled_hook(plugin_dir, journal_run):
    plugin_dir.dist("rundiff-typo", "typo", "typo_plugin", plugin_dir.TYPO_PLUGIN)
    plugins = Plugins()
    error = _only_error(plugins, "typo")
    assert error == ("plugin 'typo' implements unknown hook 'rundiff_sniff_paths'; "
                     "fix: rename it to 'rundiff_sniff_path'")
    assert "typo" not in plugins.info and plugins.registry.by_scheme("typo") is None
    _others_still_work(plugins, journal_run)


def test_hook_without_the_marker(plugin_dir, journal_run):
    plugin_dir.dist("rundiff-bare", "bare", "bare_plugin", """
        def rundiff_sniff_path(path):
            return None
    """)
    error = _only_error(plugins := Plugins(), "bare")
    assert "without @hookimpl" in error and "fix: decorate it with @hookimpl" in error
    _others_still_work(plugins, journal_run)


def test_wrong_argument_name(plugin_dir, journal_run):
    plugin_dir.dist("rundiff-args", "args", "args_plugin", """
        from rundiff_core.hookspecs import hookimpl

        @hookimpl
        def rundiff_sniff_path(pth):
            return None
    """)
    error = _only_error(plugins := Plugins(), "args")
    assert error.startswith("plugin 'args' is invalid:")
    assert error.endswith("fix: use the hook's argument names: def rundiff_sniff_path(path)")
    _others_still_work(plugins, journal_run)


def test_taken_scheme(plugin_dir, journal_run):
    plugin_dir.dist("rundiff-grabby", "grabby", "grabby_plugin", plugin_dir.TAKEN_SCHEME_PLUGIN)
    plugins = Plugins()
    error = _only_error(plugins, "grabby")
    assert "plugin 'grabby' registers scheme 'journal:'" in error
    assert "already taken by adapter 'journal' from plugin 'journal'" in error
    assert "fix: choose another scheme for adapter 'grabby'" in error
    assert "RUNDIFF_DISABLE_PLUGINS=grabby" in error
    # dropped whole: its first, valid adapter is gone too, and the plugin is unregistered
    assert plugins.registry.by_name("grabby_ok") is None and "grabby" not in plugins.info
    assert plugins.pm.get_plugin("grabby") is None
    assert plugins.registry.by_scheme("journal").plugin == "journal"
    _others_still_work(plugins, journal_run)


def test_import_failure(plugin_dir, journal_run):
    plugin_dir.dist("rundiff-broken", "broken", "broken_plugin", plugin_dir.BROKEN_IMPORT_PLUGIN)
    plugins = Plugins()
    error = _only_error(plugins, "broken")
    assert error == (
        "plugin 'broken' (package rundiff-broken) failed to import: ModuleNotFoundError: No "
        "module named 'rundiff_surely_missing_dependency'; fix: reinstall rundiff-broken (or "
        "install what it needs), or skip it with RUNDIFF_DISABLE_PLUGINS=broken"
    )
    _others_still_work(plugins, journal_run)


def test_syntax_error_is_one_line(plugin_dir, journal_run):
    plugin_dir.dist("rundiff-syntax", "syntax", "syntax_plugin", "def oops(:\n    pass\n")
    error = _only_error(plugins := Plugins(), "syntax")
    assert "failed to import: SyntaxError" in error and "RUNDIFF_DISABLE_PLUGINS=syntax" in error
    _others_still_work(plugins, journal_run)


def test_entry_point_name_clash_with_a_builtin(plugin_dir, journal_run):
    plugin_dir.dist("rundiff-journal2", "journal", "journal2_plugin", plugin_dir.GOOD_PLUGIN)
    plugins = Plugins()
    error = _only_error(plugins, "journal")
    assert "uses a name another plugin already has" in error and "fix: rename" in error
    assert plugins.info["journal"].builtin
    _others_still_work(plugins, journal_run)


class _Registers:
    def __init__(self, *specs):
        self.specs = specs

    @hookimpl
    def rundiff_register_adapters(self, register):
        for spec in self.specs:
            register(spec)


@pytest.mark.parametrize(
    ("spec", "message", "fix"),
    [
        ("not a spec", "not an AdapterSpec", "fix: call register(AdapterSpec("),
        (AdapterSpec("s", "abc", "x:Y"), "with schemes='abc'", "fix: pass a tuple: schemes=('abc',)"),
        (AdapterSpec("s", ("C",), "x:Y"), "with scheme 'C'", "at least two characters"),
        (AdapterSpec("s", ("ok",), "x.Y"), "with source='x.Y'", "'package.module:Class'"),
        (AdapterSpec("s", ("ok",), "x:Y", priority="10"), "priority='10'", "use an int"),
        (AdapterSpec("s", ("ok",), "x:Y", requires="torch"), "requires='torch'", "requires=('torch',)"),
        (AdapterSpec("journal", ("other",), "x:Y"), "adapter name 'journal'", "rename the adapter"),
    ],
)
def test_malformed_registrations(isolated_plugins, spec, message, fix):
    before = set(isolated_plugins.registry.schemes)
    assert not isolated_plugins.add(_Registers(spec), name="bad")
    error = _only_error(isolated_plugins, "bad")
    assert message in error and fix in error, error
    assert set(isolated_plugins.registry.schemes) == before and "bad" not in isolated_plugins.info


def test_register_raising_an_unexpected_exception(isolated_plugins):
    class Boom:
        @hookimpl
        def rundiff_register_adapters(self, register):
            raise KeyError("settings")

    assert not isolated_plugins.add(Boom(), name="boom", package="rundiff-boom")
    error = isolated_plugins.errors[-1]
    assert error.startswith("plugin 'boom' failed while registering adapters: KeyError")
    assert "RUNDIFF_DISABLE_PLUGINS=boom" in error


def test_a_sniff_hook_that_raises_hides_no_other_claim(isolated_plugins, journal_run):
    class Crashy:
        @hookimpl
        def rundiff_register_adapters(self, register):
            register(AdapterSpec("crashy", ("crashy",), "x:Y", priority=1))

        @hookimpl
        def rundiff_sniff_path(self, path):
            raise OSError("disk on fire")

    with registered_plugin(Crashy(), "crashy", isolated_plugins):
        assert [c.spec.name for c in collect_claims(journal_run, isolated_plugins)][0] == "journal"
        assert sniff_path(journal_run, isolated_plugins).spec.name == "journal"
    [error] = [e for e in isolated_plugins.errors if "crashy" in e]
    assert "plugin 'crashy' failed in rundiff_sniff_path: OSError: disk on fire" in error
    assert "RUNDIFF_DISABLE_PLUGINS=crashy" in error


def test_a_claim_for_an_unregistered_adapter_is_reported(isolated_plugins, journal_run):
    class Liar:
        @hookimpl
        def rundiff_sniff_path(self, path):
            return Claim("ghost", "mine, honest")

    with registered_plugin(Liar(), "liar", isolated_plugins):
        assert sniff_path(journal_run, isolated_plugins).spec.name == "journal"
    assert any("plugin 'liar' claimed" in e and "'ghost'" in e for e in isolated_plugins.errors)


def test_registered_plugin_refuses_a_broken_plugin(isolated_plugins):
    class Typo:
        @hookimpl
        def rundiff_snif_path(self, path):
            return None

    with pytest.raises(AssertionError, match="rename it to 'rundiff_sniff_path'"):
        with registered_plugin(Typo(), "typo2", isolated_plugins):
            pass


def test_missing_optional_dependency_names_the_install(isolated_plugins, plugin_dir):
    plugin_dir.module("needy_source", """
        import rundiff_surely_missing_sdk

        class NeedySource:
            pass
    """)
    spec = AdapterSpec("needy", ("needy",), "needy_source:NeedySource", requires=(
        "rundiff_surely_missing_sdk",), install_hint="pip install 'rundiff[needy]'")
    with registered_plugin(_Registers(spec), "needy", isolated_plugins):
        with pytest.raises(MissingDependencyError) as exc:
            open_source("needy:anything", isolated_plugins)
        assert exc.value.hint == "pip install 'rundiff[needy]'"
        assert "needs the 'rundiff_surely_missing_sdk' package" in exc.value.message
        [row] = [r for r in isolated_plugins.registry.describe() if r["name"] == "needy"]
        assert row["installed"] is False and row["missing"] == ["rundiff_surely_missing_sdk"]


def test_the_cli_prints_plugin_errors_on_stderr_and_keeps_going(plugin_dir, run_cli):
    plugin_dir.dist("rundiff-typo", "typo", "typo_plugin", plugin_dir.TYPO_PLUGIN)
    plugin_dir.dist("rundiff-broken", "broken", "broken_plugin", plugin_dir.BROKEN_IMPORT_PLUGIN)
    plugin_dir.dist("rundiff-fakefmt", "fakefmt", "fakefmt_plugin", plugin_dir.GOOD_PLUGIN)
    proc = run_cli("adapters", "--format", "json")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("rundiff: plugin error: ")]
    assert len(lines) == 2
    assert any("'typo'" in ln and "fix: rename it to 'rundiff_sniff_path'" in ln for ln in lines)
    assert any("'broken'" in ln and "RUNDIFF_DISABLE_PLUGINS=broken" in ln for ln in lines)
    names = {r["name"] for r in json.loads(proc.stdout)}  # stdout stays valid JSON
    assert {"journal", "fakefmt"} <= names and "typo" not in names
    listed = json.loads(run_cli("plugins").stdout)
    assert len(listed["errors"]) == 2 and {p["name"] for p in listed["plugins"]} >= {"fakefmt"}
