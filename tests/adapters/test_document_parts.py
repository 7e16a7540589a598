"""What in a results document is a setting, decided by content (issue 31): a printed report, a
group of measured numbers, and the run's own name are no settings. Each rule is held on real
files other people wrote (the wild corpus, tests/fixtures/realworld, ../shared/realdata)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from rundiff_adapters.local.documents import document_parts, printed_table
from rundiff_adapters.local.shapes.files import is_metadata_file

from rundiff_core.cli import main
from rundiff_core.resolve import load_runs

TESTS = Path(__file__).resolve().parents[1]
REAL = TESTS / "fixtures" / "realworld"
WILD = TESTS / "fixtures" / "wild"
SATELLITE = WILD / "fengyuanliu1101-explainable-satellite-image-classification-outputs" / "tree" \
    / "outputs" / "metrics.json"
LMEVAL = REAL / "lmeval" / "allenlee37-kt-harness" / "output"


def _report_lines(path: Path) -> str:
    """The sklearn-style report a text log printed after `precision    recall` (its log prefix
    cut), as the one string a results JSON would hold."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next(i for i, ln in enumerate(lines) if "precision    recall" in ln)
    return "\n".join([lines[start].split("INFO:", 1)[1], *lines[start + 1:start + 7]])


def _strings(value, out):  # noqa: ANN001, ANN202 - a JSON walk
    if isinstance(value, dict):
        for v in value.values():
            _strings(v, out)
    elif isinstance(value, list):
        for v in value:
            _strings(v, out)
    elif isinstance(value, str) and value.count("\n") >= 2:
        out.append(value)
    return out


def test_a_printed_report_is_a_table_a_prompt_is_not():
    sections = json.loads(SATELLITE.read_text())
    assert all(printed_table(s["classification_report"]) for s in sections.values())
    for name in ("lemonhu-ner-bert-pytorch-experiments", "carlamao-chinese-ner-pytorch-experiments"):
        log = WILD / name / "tree" / "experiments" / "base_model" / "evaluate.log"
        assert printed_table(_report_lines(log))
    # lm-eval results hold multi-line prompt templates and descriptions: settings, not reports
    texts = [s for p in sorted(LMEVAL.rglob("results_*.json"))
             for s in _strings(json.loads(p.read_text()), [])]
    assert len(texts) >= 5
    assert not any(printed_table(s) for s in texts)


def test_a_section_names_no_setting_and_its_report_and_round_scores_are_results():
    sections = json.loads(SATELLITE.read_text())
    config, summary, meta, notes = document_parts(sections["resnet50"], "resnet50")
    assert config == {}  # `model` is the section's name, the report a printed table
    assert meta == {"model": "resnet50"}
    assert summary["per_class_accuracy.SeaLake"] == 1.0  # a round score among measured ones
    assert len([k for k in summary if k.startswith("per_class_accuracy.")]) == 10
    assert any("printed table" in n and "classification_report" in n for n in notes)
    # without the run's name the same text is a setting: the name, not the key, decides
    config, *_ = document_parts(sections["resnet50"], "baseline")
    assert config == {"model": "resnet50"}


def test_a_group_of_measured_numbers_is_measured_whole():
    """RLlib's `timers` (five of seven timings with many digits, two round ones) is one group."""
    path = REAL / "raytune" / "rllib-accelerating-ray1" / "ray_results" / "volta1" / \
        "model1_ppo_both_gpus_no_driver_it_1" / "result.json"
    row = json.loads(path.read_text().splitlines()[0])
    _, summary, _, _ = document_parts({"timers": row["timers"]})
    assert {f"timers.{k}" for k in row["timers"]} <= set(summary)
    # a settings group of round numbers stays config
    config, summary, _, _ = document_parts({"schedule": {"warmup": 3, "decay": 0.9, "steps": 100}})
    assert summary == {} and set(config) == {"warmup", "decay", "steps"}


@pytest.mark.parametrize("section", ["resnet50", "efficientnet"])
def test_per_model_sections_of_results_have_no_config(section):
    (run,) = load_runs(f"local:{SATELLITE}#{section}")
    assert run.flat_config == {}
    assert run.summary["overall_accuracy"] > 0.9


def test_a_run_name_equal_to_its_file_stem_is_no_setting():
    logs = WILD / "mayankchoudhary76-mmr-agentic-cove-logs" / "tree" / "logs"
    (run,) = [r for r in load_runs(f"local:{logs}")
              if r.address.endswith("beauty_concat_wt1_wi1_wm0.2.json")]
    assert "run_name" not in run.flat_config and "run_name" in run.meta
    assert run.flat_config["w_meta"] == 0.2


# -- documents beside documents -------------------------------------------------------------------
MMR = WILD / "mayankchoudhary76-mmr-agentic-cove-logs" / "tree" / "logs"


def test_results_beside_run_documents_join_their_companion_or_are_runs_of_their_own(capsys):
    """`X_eval.json` (final numbers) joins its `X_report.json` (settings and the same numbers);
    `text_emb_eval.json`, measuring what the runs beside it measure, is a run with no settings;
    an encoder's sizes and a data statistic are no run; `metrics.csv`, whose columns are the run
    documents' keys, is their index."""
    runs = {os.path.basename(r.address): r for r in load_runs(f"local:{MMR}")}
    assert len(runs) == 11
    assert runs["beauty_text_emb_eval.json"].flat_config == {}
    assert runs["beauty_text_emb_eval.json"].summary["hit@10"] == pytest.approx(0.49491869918)
    report = runs["beauty_fusion_concat_with_meta_report.json"]
    assert report.flat_config["fusion"] == "concat+meta"
    want = json.loads((MMR.parents[1] / "expected.json").read_text())
    assert set(runs) == {os.path.basename(r["location"]) for r in want["runs"]}
    assert main(["ls", str(MMR), "--no-points"]) == 0
    out = capsys.readouterr().out
    assert "metrics.csv: a table of the runs beside it" in out
    assert "beauty_meta_encoder.json: JSON object of final numbers" in out


@pytest.mark.parametrize("name, metadata", [
    ("metadata.json", True), ("wandb-metadata.json", True), ("metadata_final.json", True),
    ("run_meta.json", True), ("beauty_meta_encoder.json", False),
    ("beauty_fusion_concat_with_meta_report.json", False), ("metadata.csv", False),
])
def test_a_metadata_file_is_named_so_at_either_end_of_its_name(name, metadata):
    assert is_metadata_file(name) is metadata


def test_metadata_files_of_real_runs_still_go_to_metadata():
    tree = WILD / "andyzhao2023-assignment1-basics-logs" / "tree" / "logs"
    assert {p.name for p in tree.glob("metadata*.json")} == {"metadata.json", "metadata_final.json"}
    assert all(is_metadata_file(p.name) for p in tree.glob("metadata*.json"))
    wandb = sorted(REAL.glob("wandb-meta/*/wandb/*/files/wandb-metadata.json"))
    assert len(wandb) >= 2 and all(is_metadata_file(p.name) for p in wandb)
