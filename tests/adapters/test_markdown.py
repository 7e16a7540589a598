"""Markdown results written by hand (issue 31): pipe tables, code blocks holding logs, `key: value`
lines, headings that name runs — read as what they are; prose and comparison tables are no run.

Held on real files from three public sources: a nanoGPT fork's `results.md` (four runs' console logs
under `#` headings, tests/fixtures/realworld/markdown-results), a P-tuning project's hand-pasted HF
Trainer metric blocks under `### N.` headings, and a DTU HPC job helper's `Parameters` table +
fenced stdout (both in the wild corpus), and the CS230 template's comparison table and a student's
prose notes (no run).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from rundiff_adapters.local.markdown import parse_markdown, read_markdown, runs_of
from rundiff_adapters.local.shape import shape_of
from rundiff_adapters.local.textgrammar import parse_line

from rundiff_core import InputError
from rundiff_core.resolve import load_runs, open_source

TESTS = Path(__file__).resolve().parents[1]
REAL = TESTS / "fixtures" / "realworld"
WILD = TESTS / "fixtures" / "wild"
NANOGPT = REAL / "markdown-results" / "albertmarashi-nanogpt" / "results.md"
CONLL = WILD / "evanhuang117-cse5525-research-project-conll-delete" / "tree" / "results" / "conll"
COPA = WILD / "evanhuang117-cse5525-research-project-copa" / "tree" / "results" / "copa"
DTU = WILD / "mrcogito-deep-learning-2023-outputs" / "tree" / "outputs"


def _runs(address: str) -> dict[str, object]:
    return {r.address.split("#", 1)[-1] if "#" in r.address else r.address: r
            for r in load_runs(address)}


def test_headed_logs_are_a_run_each_named_as_written():
    """Four nanoGPT console logs pasted under `#` headings (no code fence): alike sections (the
    same log keys), one run each, `FILE#HEADING` with the heading kept as written."""
    runs = _runs(f"local:{NANOGPT}")
    assert sorted(runs) == ["Backwards 0%", "Backwards 3.5%", "Backwards 5%", "Backwards: 2%"]
    first = runs["Backwards 0%"]
    assert first.point_count("loss") == 1000  # `iter 0` … `iter 999: loss 1.2539, …`
    assert first.last_value("loss") == pytest.approx(1.2539)
    assert first.point_count("val_loss") == 5
    assert not first.flat_config


def test_pasted_metric_blocks_are_final_numbers_per_heading():
    """HF Trainer `key = value` blocks under `### N.` headings (indented, one titled `2. delete1
    num_indices=5`): a run per heading, the numbers its summary, no config invented, no history
    (`epoch = 30.0` in every block is no step)."""
    runs = _runs(f"local:{CONLL / 'delete.md'}")
    assert sorted(runs) == ["2.", "2. delete1 num_indices=5", "3.", "4."]
    run = runs["2. delete1 num_indices=5"]
    assert run.summary["eval_f1"] == pytest.approx(0.9588)
    assert run.summary["best_test_f1"] == pytest.approx(0.9211)
    assert "train_runtime" not in run.summary  # `0:58:41.24` is no number
    assert not run.flat_config and not run.metric_keys()


def test_an_empty_heading_is_no_run():
    """`### 3.` at the end of base.md holds nothing: the two sections with numbers are the runs."""
    doc, _ = read_markdown(str(COPA / "base.md"))
    assert doc.runs == ["1.", "2."]


def test_parameters_table_and_fenced_log_are_one_run():
    """The DTU job helper's file: a `PARAMETER | TYPE | VALUE` table under `# Parameters` (values
    in colour tags) is the config, the fenced stdout's `Epoch [i/650], Train Loss: …` lines the
    history (x = Epoch), the LSF report's `Max Processes : 10` lines final numbers."""
    path = DTU / "WorkingSetup" / "Markdown" / "WorkingSetup_11.md"
    (run,) = load_runs(f"local:{path}")
    assert run.flat_config["epochs"] == 650 and run.flat_config["name"] == "11WorkingSetup-0"
    assert run.point_count("Train_Loss") == 650
    assert run.last_value("Validation_L1") == pytest.approx(0.2673)
    assert run.summary.get("Max_Processes") == 10
    assert "Max_Processes" not in run.flat_config  # `# end of BSUB options` names no settings


def test_a_job_that_never_ran_is_a_run_only_with_its_output():
    """A crashed job's file with only the LSF report: its resource lines (`Run time : 1 sec.`, the
    unit a word after the value) are its numbers; a job still running (a Parameters table and the
    opening of its output) is a run with its config and no points."""
    doc, _ = read_markdown(str(DTU / "SundayFix" / "Markdown" / "SundayFix_0.md"))
    assert doc.runs == [None]
    (run,) = load_runs(f"local:{DTU / 'SundayFix' / 'Markdown' / 'SundayFix_0.md'}")
    assert run.summary["Run_time_sec"] == 1 and not run.flat_config
    running = DTU / "WorkingSetup" / "Markdown" / "fixWorkingSetup_12.md"
    (run,) = load_runs(f"local:{running}")
    assert run.flat_config["name"] == "12fixWorkingSetup-0" and not run.metric_keys()


@pytest.mark.parametrize("path", [
    # the CS230 template's synthesize_results.py table: one row per run folder, compared
    WILD / "haitongli-knowledge-distillation-pytorch-alpha-temp" / "tree" / "cnn_distill_alpha_temp"
    / "results.md",
    # prose notes with `### lr = 0.001` headings and bullets (`Validation loss unstable after epoch 3`)
    REAL / "column-lists" / "chanura04-brain-tumor-cnn-metrics" / "experiments"
    / "2026_02_02_exp_013_custom_cnn_lr_1e-3" / "notes.md",
])
def test_comparison_tables_and_prose_are_no_run(path, tmp_path):
    """A table of labelled rows (a comparison, or a report per class) and prose hold no run's
    numbers: in a folder they are passed over; named alone they are not understood, said so."""
    shape = shape_of(str(path))
    assert shape.kind == "markdown" and shape.found.runs == []
    copy = tmp_path / path.name
    shutil.copyfile(path, copy)
    with pytest.raises(InputError, match="not understood"):
        open_source(f"local:{copy}")


def test_readme_files_stay_unread(tmp_path):
    """README.md beside a results file is documentation, whatever numbers it shows."""
    shutil.copyfile(CONLL / "delete.md", tmp_path / "README.md")
    with pytest.raises(InputError):
        open_source(f"local:{tmp_path}")


def test_sections_named_as_parts_are_one_run():
    """`## Train` / `## Test` with the same keys are the parts of one run, not two runs."""
    text = "# Results\n## Train\n- loss: 0.31\n- acc: 0.90\n## Test\n- loss: 0.42\n- acc: 0.87\n"
    assert runs_of(parse_markdown(text)) == [None]
    text = "## lr=0.1\n- loss: 0.31\n- acc: 0.90\n## lr=0.01\n- loss: 0.42\n- acc: 0.87\n"
    assert runs_of(parse_markdown(text)) == ["lr=0.1", "lr=0.01"]


def test_a_pipe_table_with_an_epoch_column_is_a_history(tmp_path):
    """A pipe table reads like any table: the step-like column is x, `98.0%` cells are numbers."""
    path = tmp_path / "log.md"
    path.write_text("## Training\n\n| Epoch | Train loss | Val loss |\n|---:|---:|---:|\n"
                    "| 1 | 0.268 | 0.127 |\n| 2 | 0.136 | 0.142 |\n| **3** | **0.102** | 0.073 |\n",
                    encoding="utf-8")
    (run,) = load_runs(f"local:{path}")
    assert run.point_count("Train loss") == 3 and run.last_value("Val loss") == pytest.approx(0.073)


def test_named_bracketed_counter_is_a_field():
    """`Epoch [3/30], Train Loss: …` (the PyTorch tutorials' print) reads `Epoch` as a field."""
    rec = parse_line("Epoch [1/650], Validation Loss: 0.0063, Validation L1: 0.5663")
    assert rec is not None and rec.pairs[0] == ("Epoch", 1.0) and rec.totals == {"Epoch": 650}
