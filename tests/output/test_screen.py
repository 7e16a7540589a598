"""diff always fits one screen; terminals get rich tables, pipes get the same Markdown bytes."""

from __future__ import annotations

import io
import re

from rundiff_core.cli import main
from rundiff_core.demo import write_journal_run
from rundiff_core.render.terminal import blocks, write_markdown


def test_diff_worst_case_stays_within_50_lines(tmp_path, capsys):
    """Many config changes, fidelity warnings, grad-norm spikes, events and seeds on both sides."""
    for arm, lr in (("a", 0.1), ("b", 0.2)):
        for seed in range(3):
            rows = []
            for s in range(400):
                gn = 1.0 + 0.01 * (s % 7) + (40.0 if s % 37 == 0 and s else 0.0)
                rows.append({"step": s, "loss": 2 / (s + 1) + 0.001 * seed, "grad_norm": gn,
                             "lr": lr * (1 - s / 400)})
            rows.append({"step": 399, "loss": "bad"})  # a fidelity note
            config = {"lr": lr, "seed": seed, **{f"k{i}": i if arm == "a" else i + 1 for i in range(40)}}
            events = [{"event": e, "step": 10 * i} for i, e in enumerate(["resume", "rollback", "oom"] * 3)]
            write_journal_run(str(tmp_path / arm / f"seed-{seed}"), config=config, rows=rows, seed=seed,
                              events=events, final={"status": "finished"})
    assert main(["diff", str(tmp_path / "a" / "seed-0"), str(tmp_path / "b" / "seed-0")]) == 0
    out = capsys.readouterr().out
    assert len(out.splitlines()) <= 50, out
    assert "keys changed; top 5" in out and "## Verdict" in out


def test_piped_output_is_the_markdown_bytes():
    text = "# T\n\n| a | b |\n|---|---|\n| x | 1.0 |\n\nend\n"
    buf = io.StringIO()
    write_markdown(text, buf)
    assert buf.getvalue() == text


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_rich_table_fitted_to_its_width(monkeypatch):
    monkeypatch.delenv("RUNDIFF_PLAIN", raising=False)
    monkeypatch.setenv("COLUMNS", "60")
    monkeypatch.setenv("TERM", "xterm")
    long = "imagenet-resnet50-distill-from-vit-l-with-a-very-long-name/seed-0"
    text = f"# Title\n\n| metric | {long} | Δ |\n|---|---|---|\n| loss ↓ | 0.6020 | -0.0408 |\n"
    buf = _Tty()
    write_markdown(text, buf)
    out = re.sub(r"\x1b\[[0-9;]*m", "", buf.getvalue())  # colours do not take columns
    assert "|---" not in out and "Title" in out  # not the Markdown table any more
    assert max(len(line) for line in out.splitlines()) <= 60  # the long name folds
    assert "0.6020" in out and "-0.0408" in out
    monkeypatch.setenv("RUNDIFF_PLAIN", "1")
    plain = _Tty()
    write_markdown(text, plain)
    assert plain.getvalue() == text


def test_blocks_split_tables_from_text():
    kinds = [k for k, _ in blocks("a\n| x |\n|---|\n| 1 |\nb")]
    assert kinds == ["text", "table", "text"]
