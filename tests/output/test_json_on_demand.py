"""Work only for the output asked: `compare`, `rank` and `report` build their JSON report
(`to_dict()`, `jsonable`) only when JSON is asked for — `--format json`, a plugin reporter, the
API's `to_dict`, MCP structured content. Their text costs what its lines need.

The JSON builders are replaced by ones that raise; the text commands must not notice, through the
run folders and through a fleet dataset (the pushed-down path). The control asks for JSON and sees
the builder called. Then `jsonable`'s one-walk conversion is checked against the asdict-then-walk
it replaced, on real results and on every kind of value a result holds.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rundiff_core.cli import main
from rundiff_core.engines import ablate as ablate_engine
from rundiff_core.engines import jsonable as jsonable_module
from rundiff_core.engines import rank as rank_engine
from rundiff_core.engines import report as report_engine
from rundiff_core.engines.compare import result as compare_result
from rundiff_core.engines.jsonable import jsonable

from .writers import write_sweep

BUILDERS = ((compare_result.CompareResult, "to_dict"), (rank_engine.RankResult, "to_dict"),
            (report_engine.ExperimentReport, "to_dict"))
ENGINES_USING_JSONABLE = (compare_result, rank_engine, report_engine)
PARITY = (*ENGINES_USING_JSONABLE, ablate_engine)


class JsonBuilt(AssertionError):
    pass


@pytest.fixture
def no_json(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make every JSON builder of compare/rank/report raise; returns the calls attempted."""
    calls: list[str] = []

    def refusing(name: str) -> Any:
        def refuse(*_a: object, **_k: object) -> None:
            calls.append(name)
            raise JsonBuilt(f"{name} called on the text path")
        return refuse

    for cls, attr in BUILDERS:
        monkeypatch.setattr(cls, attr, refusing(f"{cls.__name__}.{attr}"))
    for module in ENGINES_USING_JSONABLE:
        monkeypatch.setattr(module, "jsonable", refusing(f"{module.__name__}.jsonable"))
    return calls


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_sweep(tmp_path_factory.mktemp("json-on-demand") / "sweep", spike=(1, 150),
                       empty=False)


@pytest.fixture(scope="module")
def fleet(sweep: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    pytest.importorskip("duckdb")
    dataset = tmp_path_factory.mktemp("json-on-demand-fleet") / "fleet"
    assert main(["export", f"journal:{sweep}", "-o", str(dataset)]) == 0
    return f"parquet:{dataset}"


def _commands(sweep: Path, source: str) -> list[list[str]]:
    arms = [f"{source}/lr-{lr}" for lr in ("0.1", "0.2", "0.3")] if source.startswith(
        "journal:") else [source]
    return [["compare", *arms], ["rank", source], ["report", source]]


@pytest.mark.parametrize("via", ["journal", "fleet"])
def test_text_output_builds_no_json(via, sweep, request, no_json, capsys):
    source = f"journal:{sweep}" if via == "journal" else request.getfixturevalue("fleet")
    for argv in _commands(sweep, source):
        assert main(argv) == 0, argv
        out = capsys.readouterr().out
        assert out.strip() and not out.lstrip().startswith("{"), argv
    assert no_json == []


def test_a_report_written_to_a_markdown_file_builds_no_json(sweep, no_json, tmp_path, capsys):
    target = tmp_path / "report.md"
    assert main(["report", f"journal:{sweep}", "-o", str(target)]) == 0
    assert target.read_text().startswith("#") and no_json == []


@pytest.mark.parametrize("command", ["compare", "rank", "report"])
def test_the_control_json_asked_for_calls_the_builder(command, sweep, no_json, capsys):
    [argv] = [a for a in _commands(sweep, f"journal:{sweep}") if a[0] == command]
    assert main([*argv, "--format", "json"]) == 3  # the refusing builder's error: a bug, exit 3
    assert "called on the text path" in capsys.readouterr().err
    assert no_json and no_json[0].endswith(".to_dict")


# -- jsonable: one walk, the same answer as asdict then walk ---------------------------------------
def _reference(obj: Any) -> Any:
    """The conversion before: `jsonable(dataclasses.asdict(obj))`, walked twice."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _reference(dataclasses.asdict(obj))
    if isinstance(obj, dict):
        return {str(k): _reference(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_reference(v) for v in obj]
    if isinstance(obj, np.generic):
        return _reference(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    return obj


Point = collections.namedtuple("Point", "x y")


class Tags(list):
    pass


@dataclass(frozen=True)
class Leaf:
    value: float
    count: Any = np.int64(3)


@dataclass
class Everything:
    nan: float = math.nan
    inf: float = math.inf
    ninf: float = -math.inf
    plain: float = 1.5
    f32: Any = np.float32(0.25)
    f64_nan: Any = np.float64("nan")
    flag: Any = np.bool_(True)
    none: None = None
    text: str = "a"
    number: int = 7
    truth: bool = False
    point: Point = Point(1.0, math.nan)
    pair: tuple = (1, (2.0, math.inf))
    leaves: list = field(default_factory=lambda: [Leaf(1.0), Leaf(math.nan, np.int32(1))])
    by_key: dict = field(default_factory=lambda: {1: Leaf(2.0), (1, "a"): [math.inf], "s": None})
    nested: dict = field(default_factory=lambda: {"deep": {"x": [Leaf(-math.inf)]}})
    tags: Tags = field(default_factory=lambda: Tags([math.nan, "t"]))
    counts: Any = field(default_factory=lambda: collections.OrderedDict(b=1, a=np.float64(2)))
    seen: set = field(default_factory=lambda: {1, 2})
    kind: type = Leaf  # a class, not an instance: kept as it is


def test_jsonable_in_one_walk_equals_asdict_then_walk():
    obj = Everything()
    assert jsonable(obj) == _reference(obj)
    assert json.dumps(jsonable([obj, {"k": obj}]), default=str) == json.dumps(
        _reference([obj, {"k": obj}]), default=str)


def test_jsonable_shares_nothing_mutable_with_the_result():
    obj = Everything()
    got = jsonable(obj)
    assert got["seen"] == {1, 2} and got["seen"] is not obj.seen  # deep-copied, as asdict does
    assert got["leaves"] is not obj.leaves and got["by_key"] is not obj.by_key


def test_jsonable_equals_the_reference_on_real_results(sweep, monkeypatch):
    """Every engine result of the sweep: the JSON the commands print is unchanged."""
    seen: list[tuple[Any, Any]] = []
    real = jsonable_module.jsonable

    def both(obj: Any, omit: tuple[str, ...] = ()) -> Any:
        got = real(obj, omit=omit)
        ref = _reference(obj)
        if omit:
            ref = {k: v for k, v in ref.items() if k not in omit}
        # snapshot now: a caller may add keys (`schema`) to what it got afterwards
        seen.append((json.dumps(got, sort_keys=True, default=str),
                     json.dumps(ref, sort_keys=True, default=str)))
        return got

    for module in PARITY:
        monkeypatch.setattr(module, "jsonable", both)
    for argv in (*_commands(sweep, f"journal:{sweep}"),
                 ["ablate", f"{sweep}/lr-0.2", "--baseline", f"{sweep}/lr-0.1"]):
        assert main([*argv, "--format", "json"]) == 0
    assert len(seen) >= 3
    for got, expected in seen:
        assert got == expected


def test_omitting_fields_is_leaving_them_out_of_the_reference(sweep, monkeypatch):
    """`jsonable(result, omit=...)`: what `CompareResult.to_dict` builds from asdict minus its plot
    data, without converting the plot data first."""
    got: list[Any] = []
    real = compare_result.CompareResult.to_dict

    def capture(self: Any) -> Any:
        got.append(self)
        return real(self)

    monkeypatch.setattr(compare_result.CompareResult, "to_dict", capture)
    pytest.importorskip("plotly")  # --html keeps the curves the JSON leaves out
    argv = _commands(sweep, f"journal:{sweep}")[0]
    assert main([*argv, "--format", "json", "--html", str(sweep.parent / "c.html")]) == 0
    [result] = got
    assert result.curves  # --html: the plot data is there, and left out
    d = jsonable(result, omit=("curves", "bands"))
    d["schema"] = compare_result.SCHEMA
    assert json.dumps(d, sort_keys=True) == json.dumps(real(result), sort_keys=True)
