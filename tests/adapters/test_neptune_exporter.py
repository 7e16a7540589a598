"""Neptune exporter Parquet: contract suite plus the format's quirks.

neptune-exporter itself needs Python ≥ 3.13 and is not on the package index, so these files are
written here with pyarrow from the exporter's own schema (`neptune_exporter/model.py` SCHEMA) and
its file layout (`<data>/<sanitized project>/<sanitized run>_part_<n>.parquet`, names sanitised
with a blake2b digest suffix exactly as `neptune_exporter.utils.sanitize_path_part` does).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import os
from decimal import Decimal

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rundiff_core.detect import sniff_path
from rundiff_core.errors import InputError, RunNotFoundError
from rundiff_core.model import make_history
from rundiff_core.resolve import load_run, load_runs, open_source
from rundiff_core.testing import AdapterContract, WrittenRun, hash_tree

# neptune-exporter's model.SCHEMA, column for column.
SCHEMA = pa.schema([
    ("project_id", pa.string()),
    ("run_id", pa.string()),
    ("attribute_path", pa.string()),
    ("attribute_type", pa.string()),
    ("step", pa.decimal128(18, 6)),
    ("timestamp", pa.timestamp("ms", tz="UTC")),
    ("int_value", pa.int64()),
    ("float_value", pa.float64()),
    ("string_value", pa.string()),
    ("bool_value", pa.bool_()),
    ("datetime_value", pa.timestamp("ms", tz="UTC")),
    ("string_set_value", pa.list_(pa.string())),
    ("file_value", pa.struct([("path", pa.string())])),
    ("histogram_value", pa.struct([("type", pa.string()), ("edges", pa.list_(pa.float64())),
                                   ("values", pa.list_(pa.float64()))])),
])
T0 = dt.datetime(2025, 3, 1, 12, 0, tzinfo=dt.UTC)


def sanitize(part: str) -> str:
    """neptune_exporter.utils.sanitize_path_part."""
    clean = "".join(c if c.isalnum() or c in ("_", "-") else "_" for c in part)
    return clean + "-" + hashlib.blake2b(part.encode("utf-8"), digest_size=8).hexdigest()


def row(project: str, run: str, path: str, kind: str, **values) -> dict:
    base = {name: None for name in SCHEMA.names}
    base.update(project_id=project, run_id=run, attribute_path=path, attribute_type=kind)
    base.update(values)
    return base


def param_rows(project: str, run: str, params: dict) -> list[dict]:
    out = []
    for path, value in params.items():
        if isinstance(value, bool):
            out.append(row(project, run, path, "bool", bool_value=value))
        elif isinstance(value, int):
            out.append(row(project, run, path, "int", int_value=value))
        elif isinstance(value, float):
            out.append(row(project, run, path, "float", float_value=value))
        elif isinstance(value, dt.datetime):
            out.append(row(project, run, path, "datetime", datetime_value=value))
        elif isinstance(value, list):
            out.append(row(project, run, path, "string_set", string_set_value=value))
        else:
            out.append(row(project, run, path, "string", string_value=value))
    return out


def series_rows(project: str, run: str, path: str, steps, values, t0=T0) -> list[dict]:
    return [
        row(project, run, path, "float_series", step=Decimal(str(s)).quantize(Decimal("1.000000")),
            timestamp=t0 + dt.timedelta(milliseconds=int(1000 * i + 7)),
            float_value=None if isinstance(v, float) and math.isnan(v) else v)
        for i, (s, v) in enumerate(zip(steps, values, strict=True))
    ]


def write_parts(directory: str, project: str, run: str, parts: list[list[dict]]) -> list[str]:
    """The exporter's layout: one file per part, part 0 written (renamed) last."""
    os.makedirs(directory, exist_ok=True)
    paths = []
    for n, rows in reversed(list(enumerate(parts))):
        path = os.path.join(directory, f"{sanitize(run)}_part_{n}.parquet")
        pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), path, compression="snappy")
        paths.append(path)
    return sorted(paths)


def expected(rows: list[dict]) -> pd.DataFrame:
    series = [r for r in rows if r["attribute_type"] == "float_series"]
    return make_history(
        [float(r["step"]) for r in series],
        [r["attribute_path"] for r in series],
        [math.nan if r["float_value"] is None else r["float_value"] for r in series],
        [r["timestamp"].timestamp() for r in series],
    )


PROJECT = "ws/proj"
PARAMS = {
    "parameters/lr": 0.003, "parameters/batch": 64, "parameters/opt/name": "adamw",
    "parameters/use_amp": True, "seed": 3, "config/api_token": "s3cr3t-value",
    "eval/f1": 0.93,
    "sys/id": "PROJ-7", "sys/name": "baseline", "sys/custom_run_id": "cr-7", "sys/failed": False,
    "sys/creation_time": T0, "sys/tags": ["b", "a"], "sys/owner": "me",
}
STEPS = [round(0.1 * i, 1) for i in range(0, 300)]  # 0.0, 0.1, … — decimal steps


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("neptune-export") / "data"
    proj = str(root / sanitize(PROJECT))
    rng = np.random.default_rng(7)
    loss = (1 / (1 + np.arange(len(STEPS)))).tolist()
    loss[5], loss[6] = math.nan, math.inf
    acc = rng.random(30).tolist()
    rows7_a = param_rows(PROJECT, "PROJ-7", PARAMS) + series_rows(PROJECT, "PROJ-7", "train/loss", STEPS[:150], loss[:150])
    rows7_b = (series_rows(PROJECT, "PROJ-7", "train/loss", STEPS[150:], loss[150:])
               + series_rows(PROJECT, "PROJ-7", "eval/acc", [0.5 + 10 * i for i in range(30)], acc)
               + [row(PROJECT, "PROJ-7", "logs/text", "string_series", step=Decimal(1), string_value="hi"),
                  row(PROJECT, "PROJ-7", "weights", "histogram_series", step=Decimal(2),
                      histogram_value={"type": "COUNTING", "edges": [0.0, 1.0], "values": [3.0]})])
    write_parts(proj, PROJECT, "PROJ-7", [rows7_a, rows7_b])
    rows8 = param_rows(PROJECT, "PROJ-8", {
        "sys/id": "PROJ-8", "sys/name": "fork", "sys/forking/parent": "PROJ-7", "sys/forking/step": 10.5,
        "sys/failed": True, "parameters/lr": 0.001}) + series_rows(PROJECT, "PROJ-8", "train/loss",
                                                                   [10.6, 10.7, 10.8], [0.5, 0.4, 0.3])
    write_parts(proj, PROJECT, "PROJ-8", [rows8])
    return {"root": str(root), "project": proj, "rows7": rows7_a + rows7_b, "rows8": rows8}


class TestNeptuneExporterContract(AdapterContract):
    adapter = "neptune"

    @pytest.fixture
    def extra_foreign_paths(self, near_misses):
        return near_misses

    @pytest.fixture
    def written_run(self, export_dir) -> WrittenRun:
        config = {"lr": 0.003, "batch": 64, "opt": {"name": "adamw"}, "use_amp": True, "seed": 3}
        return WrittenRun(path=export_dir["project"], address=f"neptune:{export_dir['project']}#PROJ-7",
                          history=expected(export_dir["rows7"]), config=config, summary={"eval/f1": 0.93},
                          run_id="PROJ-7")

    @pytest.fixture
    def corrupt_run(self, tmp_path) -> str:
        proj = tmp_path / "proj"
        (path,) = write_parts(str(proj), PROJECT, "R-1", [series_rows(PROJECT, "R-1", "loss", [0, 1], [1.0, 0.5])])
        data = open(path, "rb").read()
        open(path, "wb").write(data[: len(data) // 2])  # torn copy: footer gone
        return f"neptune:{proj}"


def test_decimal_steps_are_exact_floats(export_dir):
    run = load_run(f"neptune:{export_dir['project']}#PROJ-7")
    h = run.history(["train/loss"])
    assert h["step"].tolist() == [float(Decimal(str(s))) for s in STEPS]
    assert h["step"].dtype == "float64" and 0.3 in h["step"].tolist()  # 0.1*3 would be 0.30000000000000004
    v = h["value"].tolist()
    assert math.isnan(v[5]) and v[6] == math.inf
    assert any("null float_value read as NaN" in n for n in run.fidelity)


def test_sys_fields_tags_status_and_redaction(export_dir):
    run = load_run(f"neptune:{export_dir['project']}#PROJ-7")
    assert run.name == "baseline" and run.run_id == "PROJ-7" and run.status == "finished"
    assert run.meta["tags"] == ["a", "b"] and run.meta["project"] == PROJECT
    assert run.meta["creation_time"].startswith("2025-03-01T12:00")
    assert run.meta["custom_run_id"] == "cr-7" and run.seed == 3
    assert run.config["api_token"] == "***REDACTED***"
    assert "s3cr3t-value" not in repr(run.to_record())
    notes = " ".join(run.fidelity)
    assert "string_series 1 attribute(s), 1 row(s)" in notes and "histogram_series 1 attribute(s)" in notes


def test_fork_lineage_is_an_event_and_a_note(export_dir):
    run = load_run(f"neptune:{export_dir['project']}#PROJ-8")
    assert run.meta["fork"] == {"parent": "PROJ-7", "step": 10.5}
    assert [(e.kind, e.step, e.payload["parent"]) for e in run.events] == [("fork", 10.5, "PROJ-7")]
    assert any("forked from run PROJ-7 at step 10.5" in n for n in run.fidelity)
    assert run.status == "crashed"
    assert run.history()["step"].tolist() == [10.6, 10.7, 10.8]


def test_project_root_single_file_and_bare_paths(export_dir):
    runs = load_runs(f"neptune:{export_dir['root']}")
    assert sorted(r.run_id for r in runs) == ["PROJ-7", "PROJ-8"]
    part1 = os.path.join(export_dir["project"], f"{sanitize('PROJ-7')}_part_1.parquet")
    one = load_run(part1)  # a bare part file: sniffed, and the run's other parts are read too
    assert one.address == f"neptune:{export_dir['project']}#PROJ-7"
    assert len(one.history()) == len(expected(export_dir["rows7"]))
    assert sniff_path(export_dir["root"]).spec.name == "neptune"


def test_unknown_fragment_lists_what_is_there(export_dir):
    with pytest.raises(RunNotFoundError, match="PROJ-7"):
        load_run(f"neptune:{export_dir['project']}#PROJ-99")


def test_keys_are_pushed_down_and_empty_keys_give_nothing(export_dir):
    src = open_source(f"neptune:{export_dir['project']}#PROJ-7")
    ref = src.list_runs()[0]
    assert set(src.load_history(ref, ["eval/acc"])["key"].astype(str)) == {"eval/acc"}
    assert len(src.load_history(ref, [])) == 0
    assert len(src.load_history(ref, ["nope"])) == 0


def test_missing_part0_and_tmp_parts_are_reported(tmp_path):
    proj = str(tmp_path / "p")
    write_parts(proj, PROJECT, "R-2", [param_rows(PROJECT, "R-2", {"parameters/a": 1}),
                                       series_rows(PROJECT, "R-2", "loss", [0, 1], [2.0, 1.0])])
    os.rename(os.path.join(proj, f"{sanitize('R-2')}_part_0.parquet"),
              os.path.join(proj, f"{sanitize('R-2')}_part_0.parquet.tmp"))
    run = load_run(f"neptune:{proj}")
    assert run.run_id == "R-2" and len(run.history()) == 2
    notes = " ".join(run.fidelity)
    assert "export incomplete" in notes and "1 unfinished .parquet.tmp" in notes


def test_a_torn_later_part_is_counted_not_fatal(tmp_path):
    proj = str(tmp_path / "p")
    paths = write_parts(proj, PROJECT, "R-3", [series_rows(PROJECT, "R-3", "loss", [0, 1], [2.0, 1.0]),
                                               series_rows(PROJECT, "R-3", "loss", [2, 3], [0.5, 0.2])])
    data = open(paths[1], "rb").read()
    open(paths[1], "wb").write(data[:100])
    run = load_run(f"neptune:{proj}")
    assert run.history()["value"].tolist() == [2.0, 1.0]
    assert any("_part_1.parquet unreadable" in n for n in run.fidelity)


def test_runs_sharing_one_file_are_split(tmp_path):
    """A hand-made file holding two runs (the exporter writes one per file) lists both."""
    path = str(tmp_path / "mixed.parquet")
    rows = series_rows(PROJECT, "A", "loss", [0, 1], [1.0, 2.0]) + series_rows(PROJECT, "B", "loss", [0], [9.0])
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), path)
    runs = {r.run_id: r for r in load_runs(f"neptune:{path}")}
    assert runs["A"].history()["value"].tolist() == [1.0, 2.0]
    assert runs["B"].history()["value"].tolist() == [9.0]
    assert not any("incomplete" in n for n in runs["A"].fidelity)
    again = load_run(runs["B"].address)  # each run's address reopens exactly that run
    assert again.run_id == "B" and again.history()["value"].tolist() == [9.0]


def test_plain_parquet_is_not_claimed(tmp_path):
    path = str(tmp_path / "metrics_part_0.parquet")
    pq.write_table(pa.table({"step": [1, 2], "loss": [1.0, 0.5]}), path)
    from rundiff_core.detect import collect_claims

    assert all(c.spec.name != "neptune" for c in collect_claims(path))


def test_reading_leaves_the_export_untouched(export_dir):
    before = hash_tree(export_dir["root"])
    for run in load_runs(f"neptune:{export_dir['root']}"):
        run.history()
    assert hash_tree(export_dir["root"]) == before


def test_missing_folder_is_an_input_error(tmp_path):
    with pytest.raises(InputError):
        load_run(f"neptune:{tmp_path / 'nope' / 'deeper'}")


def test_decimal_decoding_matches_python_decimal_everywhere():
    """The fast path (unscaled ÷ 10^6) and the text fallback (beyond 2^53) both equal float(Decimal)."""
    from rundiff_adapters.neptune.exporter import _steps

    rng = np.random.default_rng(1)
    small = rng.integers(-10**15, 10**15, 20000)
    big = rng.integers(-10**17, 10**17, 2000)
    values = [Decimal(int(x)).scaleb(-6) for x in np.concatenate([small, big])] + [None, Decimal("0.1")]
    col = pa.chunked_array([pa.array(values[:15000], pa.decimal128(18, 6)),
                            pa.array(values[15000:], pa.decimal128(18, 6)).slice(0)])
    got = _steps(col)
    want = np.array([math.nan if v is None else float(v) for v in values])
    assert np.array_equal(got, want, equal_nan=True)


def test_row_groups_are_pruned_without_losing_rows(tmp_path):
    proj = str(tmp_path / "p")
    rows = param_rows(PROJECT, "R-4", {"parameters/a": 1, "sys/name": "rg"}) + \
        series_rows(PROJECT, "R-4", "loss", list(range(500)), [float(i) for i in range(500)]) + \
        [row(PROJECT, "R-4", "txt", "string_series", step=Decimal(1), string_value="x")]
    os.makedirs(proj)
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), os.path.join(proj, "R-4_part_0.parquet"),
                   row_group_size=64)
    assert pq.ParquetFile(os.path.join(proj, "R-4_part_0.parquet")).metadata.num_row_groups > 5
    run = load_run(f"neptune:{proj}")
    assert run.name == "rg" and run.config == {"a": 1}
    assert run.history()["value"].tolist() == [float(i) for i in range(500)]
    assert len(run.history(["loss"])) == 500
    assert any("string_series 1 attribute(s), 1 row(s)" in n for n in run.fidelity)


def test_the_footer_check_agrees_with_pyarrow_without_importing_it(export_dir, tmp_path):
    """Sniffing reads the exporter's columns from the Parquet footer with the standard library; on
    exporter parts, foreign, look-alike, multi-row-group and torn files it says what pyarrow says."""
    from rundiff_adapters.neptune.layout import export_schema

    files = [os.path.join(d, f) for d, _s, fs in os.walk(export_dir["project"]) for f in fs
             if f.endswith(".parquet")]
    pd.DataFrame({"step": [1, 2], "loss": [0.5, 0.4]}).to_parquet(tmp_path / "plain.parquet")
    pd.DataFrame({"run_id_x": ["a"], "attribute_paths": ["b"], "attribute_type": ["c"]}).to_parquet(
        tmp_path / "lookalike.parquet")
    pq.write_table(pa.Table.from_pylist(series_rows(PROJECT, "R-9", "loss", range(500), [0.1] * 500),
                                        schema=SCHEMA), tmp_path / "groups.parquet", row_group_size=50)
    files += [str(tmp_path / n) for n in ("plain.parquet", "lookalike.parquet", "groups.parquet")]
    assert len(files) >= 5
    for path in files:
        assert export_schema(path) is ({"run_id", "attribute_path", "attribute_type"}
                                       <= set(pq.read_schema(path).names)), path
    assert sum(export_schema(p) is True for p in files) >= 3
    data = open(files[0], "rb").read()
    for cut in (len(data) // 2, len(data) - 3, 7):
        (tmp_path / "torn.parquet").write_bytes(data[:cut])
        assert export_schema(str(tmp_path / "torn.parquet")) is None
    (tmp_path / "text.parquet").write_text("not parquet at all")
    assert export_schema(str(tmp_path / "text.parquet")) is None
