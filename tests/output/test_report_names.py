"""The report and compare pages of real folders, read as their user would (issue: "Named as
people name them", docs/names.md): opened in Chromium, their visible text and their plot legends
hold no address, no absolute path and no `0x…` object repr."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from rundiff_core.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "compare"))
from compare_browser import file_url, find_chromium, open_page  # noqa: E402

FOLDERS = ["spinningup-rainbow-pg", "mlflow-aiops-mnist/mlruns", "tb-tensorboard-reducer/tests/runs/strict",
           "sb3-insper-dqn-a2c", "mlflow-aiops-mnist/lightning_logs", "hf-trainer-gemma3-kaggle"]
_ADDRESS = re.compile(r"\b(?:local|tb|wandb|mlflow|journal|parquet|file):/")
_REPR = re.compile(r"0x[0-9a-fA-F]{4,}")

LEGENDS = """Array.from(document.querySelectorAll('.js-plotly-plot'))
  .flatMap(p => (p.data || []).map(t => t.name || '')).filter(n => n)"""


def _problems(text: str, roots: list[str]) -> list[str]:
    found = [m.group() for m in _ADDRESS.finditer(text)] + [m.group() for m in _REPR.finditer(text)]
    found += [root for root in roots if root in text]
    return found


@pytest.mark.slow
def test_report_and_compare_pages_of_real_folders_show_names_only(realdata, tmp_path):
    chromium = find_chromium()
    if chromium is None:
        pytest.skip("chromium is not installed (scripts/install-test-deps.sh installs it)")
    pytest.importorskip("playwright")
    roots = [str(realdata.resolve()), str(Path.cwd()), str(tmp_path), "/home/", "/work/"]
    pages = []
    for i, folder in enumerate(FOLDERS):
        path = tmp_path / f"report-{i}.html"
        assert main(["report", str(realdata / folder), "-o", str(path)]) == 0, folder
        pages.append((folder, path))
    data = realdata / "spinningup-rainbow-pg" / "data"
    compare = tmp_path / "compare.html"
    assert main(["compare", str(data / "TD3"), str(data / "PPO"), str(data / "DDPG"),
                 "--html", str(compare)]) in (0, 1)
    pages.append(("compare", compare))
    for folder, path in pages:
        with open_page(file_url(str(path)), chromium) as page:
            text = page.evaluate("document.body.innerText")
            legends = page.evaluate(LEGENDS) if "js-plotly-plot" in path.read_text() else []
        assert not _problems(text, roots), (folder, _problems(text, roots)[:5])
        assert not _problems(" ".join(legends), roots), (folder, legends[:5])
        assert all(len(name) <= 60 for name in legends), (folder, legends)
