"""`rundiff plugins [--all]`, `rundiff adapters`, `rundiff detect PATH` and the errors they explain."""

from __future__ import annotations

import json
from importlib import metadata

import pytest

from rundiff_core.cli import main
from rundiff_core.hookspecs import hookimpl
from rundiff_core.plugins import DEFAULT_PLUGINS, HOOK_NAMES
from rundiff_core.registry import AdapterSpec, Claim
from rundiff_core.testing import registered_plugin

PLUGIN_KEYS = {"name", "module", "package", "version", "builtin", "hooks", "adapters", "layouts",
               "reporters", "commands"}


def _json(capsys) -> object:
    return json.loads(capsys.readouterr().out)


def _lightning_dir(tmp_path):
    """A CSVLogger-shaped folder: claimed by lightning_csv (70) and the generic local CSV (100)."""
    run = tmp_path / "lightning_logs" / "version_0"
    run.mkdir(parents=True)
    (run / "metrics.csv").write_text("epoch,loss,step\n0,0.5,9\n")
    return run


needs_contrib = pytest.mark.skipif(
    "lightning_csv" not in {ep.name for ep in metadata.entry_points(group="rundiff")},
    reason="contrib/rundiff-lightning-csv is not installed",
)


def test_plugins_all_lists_every_builtin_with_its_hooks_and_adapters(isolated_plugins, capsys):
    assert main(["plugins", "--all"]) == 0
    data = _json(capsys)
    rows = {p["name"]: p for p in data["plugins"]}
    assert {m.rsplit(".", 1)[-1] for m in DEFAULT_PLUGINS} <= set(rows)
    for row in rows.values():
        assert set(row) == PLUGIN_KEYS
        assert set(row["hooks"]) <= set(HOOK_NAMES)
        for adapter in row["adapters"]:
            assert isolated_plugins.registry.by_name(adapter).plugin == row["name"]
    journal = rows["journal"]
    assert journal["builtin"] and journal["package"] == "rundiff" and journal["adapters"] == ["journal"]
    assert journal["version"] == metadata.version("rundiff")
    assert {"rundiff_register_adapters", "rundiff_sniff_path", "rundiff_detect_project"} <= set(
        journal["hooks"])
    assert data["errors"] == []


def test_plugins_without_all_lists_third_party_only(isolated_plugins, capsys):
    class Extra:
        @hookimpl
        def rundiff_register_adapters(self, register):
            register(AdapterSpec("extra", ("extra",), "x:Y", priority=90))

    with registered_plugin(Extra(), "extra", isolated_plugins):
        assert main(["plugins"]) == 0
    rows = {p["name"]: p for p in _json(capsys)["plugins"]}
    assert not any(r["builtin"] for r in rows.values())
    assert rows["extra"]["adapters"] == ["extra"] and rows["extra"]["hooks"] == [
        "rundiff_register_adapters"]


@needs_contrib
def test_plugins_shows_the_installed_contrib_package(isolated_plugins, capsys):
    assert main(["plugins"]) == 0
    [row] = [p for p in _json(capsys)["plugins"] if p["name"] == "lightning_csv"]
    assert row["package"] == "rundiff-lightning-csv"
    assert row["version"] == metadata.version("rundiff-lightning-csv")
    assert row["adapters"] == ["lightning_csv"] and not row["builtin"]


def test_adapters_lists_detection_order_and_install_state(isolated_plugins, capsys):
    assert main(["adapters", "--format", "json"]) == 0
    rows = _json(capsys)
    assert [(r["priority"], r["name"]) for r in rows] == sorted((r["priority"], r["name"]) for r in rows)
    assert {r["name"] for r in rows} == {s.name for s in isolated_plugins.registry}
    journal = next(r for r in rows if r["name"] == "journal")
    assert journal["schemes"] == ["journal"] and journal["installed"] and journal["plugin"] == "journal"
    assert main(["adapters"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].replace(" ", "") == "|adapter|schemes|priority|providedby|installed|"
    assert len(table) == 2 + len(rows)


def test_adapters_shows_the_install_hint_for_a_missing_package(isolated_plugins, capsys):
    class Needy:
        @hookimpl
        def rundiff_register_adapters(self, register):
            register(AdapterSpec("needy", ("needy",), "needy_mod:Source", priority=95,
                                 requires=("rundiff_surely_missing_sdk",),
                                 install_hint="pip install 'rundiff[needy]'"))

    with registered_plugin(Needy(), "needy", isolated_plugins):
        assert main(["adapters"]) == 0
    [line] = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("| needy")]
    assert "no — pip install 'rundiff[needy]'" in line


@needs_contrib
def test_detect_shows_every_claim_with_its_reason_and_the_winner(isolated_plugins, tmp_path, capsys):
    run = _lightning_dir(tmp_path)
    assert main(["detect", str(run), "--format", "json"]) == 0
    data = _json(capsys)
    assert [c["adapter"] for c in data["claims"]] == ["lightning_csv", "local"]
    assert all(c["reason"] for c in data["claims"])
    assert data["winner"] == "lightning_csv" and data["address"] == f"lightning:{run}"
    assert main(["detect", str(run)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("claim: lightning_csv (priority 70): CSVLogger version folder")
    assert out[1].startswith("claim: local (priority 100): ")
    assert out[2] == f"winner: lightning_csv → lightning:{run}"


def test_detect_on_a_file_reports_the_folder_it_opens(isolated_plugins, tmp_path, capsys):
    run = tmp_path / "r"
    run.mkdir()
    (run / "metrics.jsonl").write_text('{"step": 0, "loss": 1}\n')
    assert main(["detect", str(run / "metrics.jsonl"), "--format", "json"]) == 0
    data = _json(capsys)
    assert data["winner"] == "journal" and data["address"] == f"journal:{run}"
    assert data["claims"][0]["locator"] == str(run)


def test_detect_with_no_claim_exits_2_and_lists_schemes(isolated_plugins, tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("nothing")
    assert main(["detect", str(tmp_path)]) == 2
    out = capsys.readouterr().out
    assert "winner: none — no adapter recognises" in out and "journal:" in out


class _Rival:
    """A second adapter at the journal's priority that claims the same folders."""

    @hookimpl
    def rundiff_register_adapters(self, register):
        register(AdapterSpec("rival", ("rival",), "x:Y", priority=50))

    @hookimpl
    def rundiff_sniff_path(self, path):
        return Claim("rival", "rival also reads metrics.jsonl")


def test_ambiguous_source_lists_claims_and_suggests_schemes(isolated_plugins, tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_text('{"step": 0, "loss": 1}\n')
    with registered_plugin(_Rival(), "rival", isolated_plugins):
        assert main(["detect", str(run), "--format", "json"]) == 2
        data = _json(capsys)
        assert {c["adapter"] for c in data["claims"]} >= {"journal", "rival"}
        assert data["winner"] is None and "ambiguous source" in data["error"]
        assert main(["ls", str(run)]) == 2
        err = capsys.readouterr().err.splitlines()
        assert err[0].startswith(f"rundiff: error: ambiguous source {run}: claimed by ")
        assert "journal (run directory with metrics.jsonl)" in err[0]
        assert "rival (rival also reads metrics.jsonl)" in err[0]
        assert err[1] == f"  hint: prefix the path with a scheme, e.g. journal:{run} or rival:{run}"
        assert main(["ls", f"journal:{run}", "--no-points"]) == 0  # the suggested fix works
    assert "Traceback" not in capsys.readouterr().err


def test_unknown_scheme_exits_2_naming_known_schemes(isolated_plugins, capsys):
    assert main(["ls", "nosuch:thing"]) == 2
    err = capsys.readouterr().err
    assert "rundiff: error: unknown scheme 'nosuch:' in 'nosuch:thing'" in err
    for scheme in isolated_plugins.registry.schemes:
        assert f"{scheme}:" in err
    assert "Traceback" not in err


def test_parse_address_hook_claims_an_unregistered_scheme(isolated_plugins, tmp_path):
    """`rundiff_parse_address` turns a URL-ish address into a registered scheme's address."""
    from rundiff_core.address import Address
    from rundiff_core.resolve import open_source

    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_text('{"step": 0, "loss": 1}\n')

    class Urls:
        @hookimpl
        def rundiff_parse_address(self, raw):
            if raw.startswith("myjournal://"):
                locator = raw.removeprefix("myjournal://")
                return Address(f"journal:{locator}", "journal", locator)
            return None

    with registered_plugin(Urls(), "urls", isolated_plugins):
        src = open_source(f"myjournal://{run}", isolated_plugins)
        assert src.list_runs()[0].address == f"journal:{run}"
        with pytest.raises(Exception, match="unknown scheme 'otherurl:'"):
            open_source("otherurl://x", isolated_plugins)


def test_a_parse_address_hook_that_raises_is_isolated(isolated_plugins, capsys):
    class Crashy:
        @hookimpl
        def rundiff_parse_address(self, raw):
            raise ValueError("cannot parse")

    with registered_plugin(Crashy(), "crashy-urls", isolated_plugins):
        assert main(["ls", "nosuch:thing"]) == 2
    err = capsys.readouterr().err
    assert "unknown scheme 'nosuch:'" in err and "Traceback" not in err
    assert any("'crashy-urls' failed in rundiff_parse_address: ValueError" in e
               for e in isolated_plugins.errors)
