"""`rundiff ls` / `rundiff diff` on Neptune runs, against a journal run, the online address form,
project detection, no SDK at plugin load, and Neptune tokens never printed."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rundiff_core.cli import main
from rundiff_core.demo import write_journal_run

PROJECT = "ws/proj"
SCHEMA = pa.schema([  # neptune-exporter's model.SCHEMA (the columns these tests fill)
    ("project_id", pa.string()), ("run_id", pa.string()), ("attribute_path", pa.string()),
    ("attribute_type", pa.string()), ("step", pa.decimal128(18, 6)), ("timestamp", pa.timestamp("ms", tz="UTC")),
    ("int_value", pa.int64()), ("float_value", pa.float64()), ("string_value", pa.string()),
    ("bool_value", pa.bool_()), ("datetime_value", pa.timestamp("ms", tz="UTC")),
    ("string_set_value", pa.list_(pa.string())),
])


def row(project: str, run: str, path: str, kind: str, **values) -> dict:
    return {**{n: None for n in SCHEMA.names}, "project_id": project, "run_id": run,
            "attribute_path": path, "attribute_type": kind, **values}


def param_rows(project: str, run: str, params: dict) -> list[dict]:
    return [row(project, run, k, "float", float_value=v) if isinstance(v, float)
            else row(project, run, k, "string", string_value=v) for k, v in params.items()]


def write_run(directory: str, run: str, rows: list[dict]) -> None:
    os.makedirs(directory, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), os.path.join(directory, f"{run}_part_0.parquet"))

# A token shaped like Neptune's (base64 of {"api_address": …, "api_key": …}); not a real one.
FAKE_TOKEN = "eyJhcGlfYWRkcmVzcyI6Imh0dHBzOi8vZXhhbXBsZS5pbnZhbGlkIiwiYXBpX2tleSI6ImZha2UifQ=="
T0 = dt.datetime(2025, 3, 1, tzinfo=dt.UTC)


def loss_rows(run: str, floor: float, n: int = 50) -> list[dict]:
    return [row(PROJECT, run, "loss", "float_series", step=Decimal(i), float_value=floor + 1.0 / (i + 1),
                timestamp=T0 + dt.timedelta(seconds=i)) for i in range(n)]


@pytest.fixture
def export_project(tmp_path) -> str:
    proj = str(tmp_path / "export" / "ws_proj")
    write_run(proj, "NEP-1", param_rows(PROJECT, "NEP-1", {
        "sys/name": "nep-base", "parameters/lr": 0.1, "parameters/note": f"token={FAKE_TOKEN}",
        "parameters/neptune_api_token": FAKE_TOKEN}) + loss_rows("NEP-1", 0.5))
    write_run(proj, "NEP-2", param_rows(PROJECT, "NEP-2", {
        "sys/name": "nep-variant", "parameters/lr": 0.05}) + loss_rows("NEP-2", 0.3))
    return proj


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_ls_lists_neptune_runs_with_keys(capsys, export_project, monkeypatch):
    monkeypatch.setenv("NEPTUNE_API_TOKEN", FAKE_TOKEN)
    code, out, err = run_cli(capsys, "ls", "--format", "json", f"neptune:{export_project}")
    assert code == 0, err
    rows = {r["name"]: r for r in json.loads(out)}
    assert set(rows) == {"nep-base", "nep-variant"}
    assert rows["nep-base"]["keys"] == [{"key": "loss", "points": 50, "first_step": 0.0, "last_step": 49.0}]
    assert FAKE_TOKEN not in out + err


def test_diff_neptune_against_neptune_and_journal(capsys, export_project, tmp_path, monkeypatch):
    monkeypatch.setenv("NEPTUNE_API_TOKEN", FAKE_TOKEN)
    journal = write_journal_run(str(tmp_path / "journal" / "run"), config={"lr": 0.1},
                                rows=[{"step": i, "loss": 0.4 + 1.0 / (i + 1)} for i in range(50)],
                                final={"status": "finished"})
    code, out, err = run_cli(capsys, "diff", f"neptune:{export_project}#NEP-1", journal,
                             "--metric", "loss", "--format", "json")
    assert code == 0, err
    result = json.loads(out)
    text = json.dumps(result)
    assert "nep-base" in text and FAKE_TOKEN not in out + err
    code, out, err = run_cli(capsys, "diff", f"neptune:{export_project}#NEP-1",
                             f"neptune:{export_project}#NEP-2", "--metric", "loss")
    assert code == 0, err
    assert "lr" in out and FAKE_TOKEN not in out + err


def test_online_address_is_a_clear_typed_error(capsys, monkeypatch):
    monkeypatch.setenv("NEPTUNE_API_TOKEN", FAKE_TOKEN)
    code, out, err = run_cli(capsys, "ls", "neptune:my-workspace/my-project")
    assert code == 2
    assert "neptune-query" in err and "NEPTUNE_API_TOKEN" in err and "Traceback" not in err
    assert FAKE_TOKEN not in out + err


def test_online_error_without_token_or_client(monkeypatch):
    from rundiff_adapters.neptune import online

    from rundiff_core.errors import InputError, MissingDependencyError, UsageError

    monkeypatch.setattr(online, "client_installed", lambda: False)
    assert isinstance(online.online_error("w/p", {}), MissingDependencyError)
    monkeypatch.setattr(online, "client_installed", lambda: True)
    assert isinstance(online.online_error("w/p", {}), InputError)
    err = online.online_error("w/p/RUN-1", {"NEPTUNE_API_TOKEN": FAKE_TOKEN})
    assert isinstance(err, UsageError) and FAKE_TOKEN not in str(err)


def test_project_detection_finds_dot_neptune(capsys, tmp_path, monkeypatch):
    scale = pytest.importorskip("neptune_scale")
    with scale.Run(run_id="detected", mode="offline", project="ws/proj", log_directory=str(tmp_path / ".neptune"),
                   enable_console_log_capture=False, source_tracking_config=None) as run:
        run.log_metrics({"loss": 1.0}, step=0)
        run.log_metrics({"loss": 0.5}, step=1)
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "ls")
    assert code == 0, err
    assert "detected  [neptune" in out and "loss: 2 points, steps 0–1" in out


def test_plugin_load_and_sniff_import_no_tracker_sdk(export_project, tmp_path):
    write_journal_run(str(tmp_path / "j"), config={}, rows=[{"step": 0, "loss": 1.0}])
    code = f"""
import sys
from rundiff_core.plugins import get_plugins
from rundiff_core.detect import sniff_path
from rundiff_core.resolve import load_runs
get_plugins()
assert sniff_path({export_project!r}).spec.name == "neptune"
for run in load_runs({export_project!r}):
    run.history()
bad = [m for m in ("neptune", "neptune_scale", "neptune_api", "neptune_query") if m in sys.modules]
assert not bad, bad
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert proc.returncode == 0, proc.stderr


def test_tokens_in_values_are_scrubbed(export_project):
    from rundiff_core.resolve import load_run

    run = load_run(f"neptune:{export_project}#NEP-1")
    assert FAKE_TOKEN not in repr(run.to_record())
    assert run.config["neptune_api_token"] == "***REDACTED***"
    assert run.config["note"].startswith("token=***REDACTED***")


def test_parquet_of_another_shape_is_left_to_other_adapters(tmp_path):
    path = tmp_path / "plain.parquet"
    pq.write_table(pa.table({"step": [0, 1], "loss": [1.0, 0.5]}), path)
    from rundiff_core.detect import collect_claims

    assert "neptune" not in [c.spec.name for c in collect_claims(str(path))]


def test_detect_on_an_export_imports_no_pyarrow(export_project):
    """`rundiff detect` confirms exporter Parquet from its footer without pyarrow (or pandas)."""
    code = f"""
import sys
from rundiff_core.cli import main
assert main(["detect", {export_project!r}]) == 0
bad = [m for m in ("pyarrow", "pandas", "numpy", "polars") if m in sys.modules]
assert not bad, bad
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(
                              [os.getcwd(), os.environ.get("PYTHONPATH", "")])})
    assert proc.returncode == 0, proc.stderr
    assert "winner: neptune → neptune:" in proc.stdout
