"""compare on two real-scale W&B runs (255 keys each, written with wandb's offline writer):
one screen by default, every metric with --all, every cell in JSON."""

from __future__ import annotations

import json
import re

import pytest

from rundiff_core.cli import main

from .writers import NGRAMS, WIDE_IDS


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


NGRAM_GOALS = ("--goal", "val/ngram_*=min", "--goal", "test/ngram_*=min")


def test_an_unknown_direction_family_claims_nothing(wide, capsys):
    """`val/ngram_<n>` names no direction: its family row gives Δ, never better, worse or worst."""
    _, runs = wide
    lines = _run(capsys, "compare", runs[64], runs[256]).splitlines()
    row = next(line for line in lines if line.startswith("| val/ngram_<n>"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[0] == "val/ngram_<n>" and cells[2:4] == ["—", "—"] and cells[6] == "direction unknown"
    assert any("Direction unknown for" in line for line in lines)


def test_default_compare_fits_one_screen(wide, capsys):
    _, runs = wide
    out = _run(capsys, "compare", runs[64], runs[256], *NGRAM_GOALS)
    lines = out.splitlines()
    assert len(lines) <= 60, len(lines)
    # the main loss is a row; each family is one summary row
    assert any(line.startswith("| train/loss") for line in lines)
    fam = {name: next(line for line in lines if line.startswith(f"| {name}"))
           for name in ("val/ngram_<n>", "test/ngram_<n>")}
    for row in fam.values():
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[1] == str(NGRAMS)  # members
        assert int(cells[2]) + int(cells[3]) <= NGRAMS  # favour the student / the baseline
        assert re.match(r"[-+]\d\.\d{4} … [-+]\d\.\d{4}", cells[5])  # Δ range
        assert re.match(r"(val|test)/ngram_\d+ \(", cells[6])  # the worst member is named
    assert not any(line.startswith("| val/ngram_1 ") for line in lines)  # members folded
    # both runs traceable: their W&B names and run ids in the legend (addresses with --trace)
    for hidden, rid in WIDE_IDS.items():
        (entry,) = [line for line in lines if line.startswith(f"- **hidden-{hidden}**")]
        assert f"run id {rid}" in entry and "wandb:" not in entry
    more = next(line for line in lines if "more metrics were compared" in line)
    assert "`--all`" in more and "--format json" in more and more.startswith("254 ")
    assert "[^" not in out  # every cell is read at step 199: no footnote needed
    assert "every cell at step 199" in out
    reading = out.split("## Reading", 1)[1].strip()
    assert len(re.findall(r"[.!?](\s|$)", reading)) <= 3


def test_all_lists_every_metric_in_natural_order(wide, capsys):
    _, runs = wide
    out = _run(capsys, "compare", runs[64], runs[256], "--all")
    rows = [line.split("|")[1].strip() for line in out.splitlines()
            if line.startswith("| ") and ("ngram" in line or "loss" in line) and "family" not in line
            and "<n>" not in line]
    names = [r.rsplit(" ", 1)[0] for r in rows]
    expected = (["train/loss"] + [f"val/ngram_{n}" for n in range(1, NGRAMS + 1)]
                + [f"test/ngram_{n}" for n in range(1, NGRAMS + 1)])
    assert sorted(names) == sorted(expected) and len(names) == 255
    vals = [n for n in names if n.startswith("val/")]
    assert vals[:3] == ["val/ngram_1", "val/ngram_2", "val/ngram_3"]  # not ngram_1, ngram_10 …
    assert "more metrics were compared" not in out


def test_glob_metric_selects_a_family(wide, capsys):
    _, runs = wide
    out = _run(capsys, "compare", runs[64], runs[256], "--metric", "val/ngram_1*", "--format", "json")
    got = [m["metric"] for m in json.loads(out)["metrics"]]
    want = [f"val/ngram_{n}" for n in range(1, NGRAMS + 1) if str(n).startswith("1")]
    assert got == want  # natural order: ngram_1, ngram_10 … ngram_19, ngram_100 …
    code = main(["compare", runs[64], runs[256], "--metric", "nope/*"])
    assert code == 2 and "matches no logged key" in capsys.readouterr().err


def test_json_keeps_every_cell_with_its_provenance(wide, capsys):
    _, runs = wide
    d = json.loads(_run(capsys, "compare", runs[64], runs[256], "--format", "json"))
    assert len(d["metrics"]) == 255 and len(d["shown"]) == 1
    for m in d["metrics"]:
        assert len(m["rows"]) == 2
        for row in m["rows"]:
            (cell,) = row["cells"]
            assert cell["address"].startswith("wandb:") and cell["run_id"] in WIDE_IDS.values()
            assert cell["key"] == m["metric"] and cell["step_used"] == 199 and cell["method"] == "exact"
    assert {f["family"] for f in d["families"]} == {"val/ngram_<n>", "test/ngram_<n>"}


def test_diff_on_the_wide_pair_fits_50_lines(wide, capsys):
    _, runs = wide
    out = _run(capsys, "diff", runs[64], runs[256])
    assert len(out.splitlines()) <= 50
    assert "## Headline metric: train/loss" in out  # the main loss, although no key is 'loss'
    assert "254 other shared metrics" in out


def test_a_declared_metric_is_a_row_and_leaves_its_family(wide, tmp_path, capsys):
    _, runs = wide
    toml = tmp_path / "rundiff.toml"
    toml.write_text('[groups]\ndownstream = ["test/ngram_7"]\n')
    out = _run(capsys, "compare", runs[64], runs[256], "--project-file", str(toml))
    assert any(line.startswith("| test/ngram_7 ") for line in out.splitlines())
    fam = next(line for line in out.splitlines() if line.startswith("| test/ngram_<n>"))
    assert fam.split("|")[2].strip() == str(NGRAMS - 1)


def test_html_plots_the_selection_and_keeps_every_metric_one_click_away(wide, tmp_path, capsys):
    pytest.importorskip("plotly")
    _, runs = wide
    page = tmp_path / "wide.html"
    _run(capsys, "compare", runs[64], runs[256], "--html", str(page), *NGRAM_GOALS)
    text = page.read_text()
    assert text.count('class="rundiff-plot"') == 1  # train/loss, the one shown row
    details = text[text.index('<details class="all-metrics">'):]
    assert "All 255 compared metrics" in details
    assert all(f"<td>val/ngram_{n} ↓</td>" in details for n in (1, 2, 10, 127))

