"""Addresses, sniffing, ambiguity and the CLI's error contract (one line, exit 2, no traceback)."""

from __future__ import annotations

import json

import pytest

from rundiff_core.address import parse_address
from rundiff_core.cli import main
from rundiff_core.detect import collect_claims, sniff_path
from rundiff_core.errors import (
    AddressError,
    AmbiguousSourceError,
    InputError,
    UnrecognizedSourceError,
)
from rundiff_core.hookspecs import hookimpl
from rundiff_core.registry import AdapterSpec, Claim
from rundiff_core.resolve import open_source
from rundiff_core.testing import registered_plugin


@pytest.mark.parametrize(
    ("raw", "scheme", "locator"),
    [
        ("journal:runs/foo", "journal", "runs/foo"),
        ("wandb:ent/proj/abc123", "wandb", "ent/proj/abc123"),
        ("C:\\runs\\foo", None, "C:\\runs\\foo"),
        ("runs/foo", None, "runs/foo"),
        ("./journal:x", None, "./journal:x"),
        ("MLflow:abc", "mlflow", "abc"),
    ],
)
def test_parse_address(raw, scheme, locator):
    a = parse_address(raw)
    assert (a.scheme, a.locator) == (scheme, locator)


def test_unknown_scheme_names_known_schemes(capsys):
    assert main(["ls", "nosuch:thing"]) == 2
    err = capsys.readouterr().err
    assert "unknown scheme 'nosuch:'" in err and "journal:" in err and "Traceback" not in err


def test_missing_path_is_a_clear_input_error(tmp_path, capsys):
    assert main(["ls", str(tmp_path / "absent")]) == 2
    assert "no such file or directory" in capsys.readouterr().err


def test_unrecognised_path_lists_schemes(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(UnrecognizedSourceError) as exc:
        sniff_path(str(tmp_path))
    assert "journal:" in exc.value.hint


def test_existing_dir_named_like_an_address_is_escaped_with_dot_slash(tmp_path, monkeypatch):
    weird = tmp_path / "journal:x"
    weird.mkdir()
    (weird / "metrics.jsonl").write_text('{"step": 1, "loss": 1}\n')
    monkeypatch.chdir(tmp_path)
    src = open_source("./journal:x")
    assert src.list_runs()[0].address == f"journal:{weird}"
    with pytest.raises(InputError):  # explicit registered scheme wins: locator "x" does not exist
        open_source("journal:x")


def test_containers_rank_before_contents(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_text('{"step": 1, "loss": 1}\n')
    (run / "results.json").write_text('{"acc": 0.5}')
    claims = collect_claims(str(run))
    assert [c.spec.name for c in claims][:2] == ["journal", "local"]
    assert sniff_path(str(run)).spec.name == "journal"


class _TwinPlugin:
    @hookimpl
    def rundiff_register_adapters(self, register):
        register(AdapterSpec(name="twin", schemes=("twin",), source="x:y", priority=50))

    @hookimpl
    def rundiff_sniff_path(self, path):
        return Claim("twin", "twin claims everything with metrics.jsonl")


def test_tie_at_best_priority_is_ambiguous(tmp_path, isolated_plugins):
    (tmp_path / "metrics.jsonl").write_text('{"step": 1, "loss": 1}\n')
    with registered_plugin(_TwinPlugin(), "twin", isolated_plugins):
        with pytest.raises(AmbiguousSourceError) as exc:
            sniff_path(str(tmp_path), isolated_plugins)
    assert "journal" in exc.value.message and "twin" in exc.value.message
    assert "journal:" in exc.value.hint and "twin:" in exc.value.hint


def test_detect_cli_shows_claims_and_winner(demo_runs, capsys):
    assert main(["detect", str(demo_runs / "exp-baseline" / "seed-0"), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["winner"] == "journal"
    assert data["claims"][0]["reason"].startswith("run directory with")


def test_project_detection_without_address(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["detect"]) == 2
    assert "no tracker found" in capsys.readouterr().out
    from rundiff_core.demo import make_arm

    make_arm(str(tmp_path / "runs"), "exp", lr=0.1, floor=0.5, seeds=2, steps=50)
    assert main(["ls", "--no-points"]) == 0
    out = capsys.readouterr().out
    assert "runs/exp/seed-0" in out and "runs/exp/seed-1" in out


def test_unknown_scheme_via_error_type():
    with pytest.raises(AddressError):
        open_source("zzz:abc")


def test_tracking_uri_option_points_mlflow_addresses_at_a_store(realdata, monkeypatch, capsys):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "placeholder")  # so teardown restores the original
    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    store = realdata / "mlflow-aiops-mnist" / "mlruns"
    assert main(["--tracking-uri", str(store), "ls", "mlflow:", "--no-points", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 6 and all(r["address"].startswith(f"mlflow:{store}#") for r in rows)
