"""The environment switches: RUNDIFF_LOAD_PLUGINS, RUNDIFF_DISABLE_PLUGINS, RUNDIFF_TRACE_PLUGINS."""

from __future__ import annotations

import json

from rundiff_core.detect import collect_claims
from rundiff_core.plugins import DEFAULT_PLUGINS, Plugins
from rundiff_core.resolve import open_source

BUILTINS = {m.rsplit(".", 1)[-1] for m in DEFAULT_PLUGINS}


def _third_party(plugins: Plugins) -> set[str]:
    return {name for name, info in plugins.info.items() if not info.builtin}


def test_installed_fake_dist_loads_through_its_entry_point(plugin_dir):
    plugin_dir.dist("rundiff-fakefmt", "fakefmt", "fakefmt_plugin", plugin_dir.GOOD_PLUGIN, "2.3")
    plugins = Plugins()
    info = plugins.info["fakefmt"]
    assert (info.package, info.version, info.builtin) == ("rundiff-fakefmt", "2.3", False)
    assert info.adapters == ["fakefmt"] and plugins.registry.by_scheme("fakefmt") is not None
    assert plugins.errors == []


def test_load_plugins_empty_loads_no_third_party_plugin(plugin_dir, monkeypatch):
    plugin_dir.dist("rundiff-fakefmt", "fakefmt", "fakefmt_plugin", plugin_dir.GOOD_PLUGIN)
    monkeypatch.setenv("RUNDIFF_LOAD_PLUGINS", "")
    plugins = Plugins()
    assert _third_party(plugins) == set()
    assert BUILTINS <= set(plugins.info)  # built-ins always load unless disabled
    skipped = {s["name"]: s["reason"] for s in plugins.skipped}
    assert skipped["fakefmt"] == "not listed in RUNDIFF_LOAD_PLUGINS"
    assert "lightning_csv" in skipped or "lightning_csv" not in plugins.info
    assert plugins.errors == []


def test_load_plugins_list_loads_only_those(plugin_dir, monkeypatch):
    plugin_dir.dist("rundiff-fakefmt", "fakefmt", "fakefmt_plugin", plugin_dir.GOOD_PLUGIN)
    plugin_dir.dist("rundiff-other", "other", "other_plugin", plugin_dir.GOOD_PLUGIN.replace(
        "fakefmt", "otherfmt"))
    monkeypatch.setenv("RUNDIFF_LOAD_PLUGINS", " other , ")
    plugins = Plugins()
    assert _third_party(plugins) == {"other"}
    assert plugins.registry.by_scheme("otherfmt") and not plugins.registry.by_scheme("fakefmt")


def test_load_plugins_naming_an_uninstalled_plugin_says_so(plugin_dir, monkeypatch):
    plugin_dir.dist("rundiff-fakefmt", "fakefmt", "fakefmt_plugin", plugin_dir.GOOD_PLUGIN)
    monkeypatch.setenv("RUNDIFF_LOAD_PLUGINS", "fakefmt,fakefnt")
    plugins = Plugins()
    assert "fakefmt" in plugins.info
    [error] = plugins.errors
    assert "RUNDIFF_LOAD_PLUGINS names 'fakefnt'" in error and "fakefmt" in error
    assert "\n" not in error


def test_disable_plugins_skips_builtins_and_third_party(plugin_dir, monkeypatch, tmp_path):
    plugin_dir.dist("rundiff-fakefmt", "fakefmt", "fakefmt_plugin", plugin_dir.GOOD_PLUGIN)
    monkeypatch.setenv("RUNDIFF_DISABLE_PLUGINS", "journal,fakefmt")
    plugins = Plugins()
    assert "journal" not in plugins.info and "fakefmt" not in plugins.info
    assert plugins.registry.by_scheme("journal") is None
    assert BUILTINS - {"journal"} <= set(plugins.info)
    run = tmp_path / "r"
    run.mkdir()
    (run / "metrics.jsonl").write_text('{"step": 0, "loss": 1}\n')
    assert all(c.spec.name != "journal" for c in collect_claims(str(run), plugins))
    assert {s["name"] for s in plugins.skipped} == {"journal", "fakefmt"}


def test_disable_plugins_with_a_typo_is_reported(plugin_dir, monkeypatch):
    monkeypatch.setenv("RUNDIFF_DISABLE_PLUGINS", "jornal")
    plugins = Plugins()
    assert "journal" in plugins.info
    assert any("RUNDIFF_DISABLE_PLUGINS names 'jornal'" in e and "journal" in e for e in plugins.errors)


def test_trace_plugins_prints_loading_registration_and_hook_calls(plugin_dir, monkeypatch, capsys,
                                                                  tmp_path):
    plugin_dir.dist("rundiff-fakefmt", "fakefmt", "fakefmt_plugin", plugin_dir.GOOD_PLUGIN)
    monkeypatch.setenv("RUNDIFF_TRACE_PLUGINS", "1")
    monkeypatch.setenv("RUNDIFF_DISABLE_PLUGINS", "local")
    plugins = Plugins()
    target = tmp_path / "x.fake"
    target.write_text("")
    claims = collect_claims(str(target), plugins)
    try:
        open_source("zzz:abc", plugins)
    except Exception:
        pass
    err = capsys.readouterr().err
    assert "rundiff trace: load built-in plugin 'journal' from rundiff_adapters.journal" in err
    assert "rundiff trace: skip plugin 'local': listed in RUNDIFF_DISABLE_PLUGINS" in err
    assert "rundiff trace: load plugin 'fakefmt' from entry point fakefmt_plugin" in err
    assert "plugin 'fakefmt' registered adapter 'fakefmt' (schemes fakefmt:; priority 80)" in err
    assert f"fakefmt.rundiff_sniff_path(path={str(target)!r}) -> Claim(adapter='fakefmt'" in err
    assert "journal.rundiff_sniff_path(" in err and " -> None" in err
    assert "rundiff trace: call rundiff_parse_address(raw='zzz:abc') on " in err
    assert f"rundiff trace: call rundiff_sniff_path(path={str(target)!r}) on " in err
    assert [c.spec.name for c in claims] == ["fakefmt"]


def test_no_trace_output_without_the_switch(plugin_dir, capsys, tmp_path):
    plugins = Plugins()
    collect_claims(str(tmp_path), plugins)
    assert "rundiff trace" not in capsys.readouterr().err


def test_switches_in_a_real_cli_process(plugin_dir, run_cli):
    plugin_dir.dist("rundiff-fakefmt", "fakefmt", "fakefmt_plugin", plugin_dir.GOOD_PLUGIN)
    everything = run_cli("adapters", "--format", "json")
    assert everything.returncode == 0, everything.stderr
    assert "fakefmt" in {r["name"] for r in json.loads(everything.stdout)}
    none = run_cli("plugins", env={"RUNDIFF_LOAD_PLUGINS": ""})
    data = json.loads(none.stdout)
    assert data["plugins"] == [] and "fakefmt" in {s["name"] for s in data["skipped"]}
    traced = run_cli("plugins", env={"RUNDIFF_DISABLE_PLUGINS": "fakefmt",
                                     "RUNDIFF_TRACE_PLUGINS": "1"})
    assert "fakefmt" not in {p["name"] for p in json.loads(traced.stdout)["plugins"]}
    assert "rundiff trace: skip plugin 'fakefmt': listed in RUNDIFF_DISABLE_PLUGINS" in traced.stderr
