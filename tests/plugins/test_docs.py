"""docs/plugins is tested: hooks documented and exercised, the detection table live, excerpts true."""

from __future__ import annotations

import importlib.util
import inspect
import re
from pathlib import Path

import pytest

from rundiff_core import hookspecs
from rundiff_core.plugins import HOOK_NAMES, Plugins

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs" / "plugins"
HOOKS_MD = DOCS / "hooks.md"


def _signature(hook: str) -> str:
    return f"{hook}({', '.join(inspect.signature(getattr(hookspecs, hook)).parameters)})"


def _sections(text: str) -> dict[str, str]:
    """`## heading` → the text under it."""
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


def test_there_are_hooks_to_document():
    assert set(HOOK_NAMES) >= {"rundiff_register_adapters", "rundiff_sniff_path",
                               "rundiff_parse_address", "rundiff_detect_project",
                               "rundiff_secret_patterns"}


@pytest.mark.parametrize("hook", HOOK_NAMES)
def test_each_hook_is_documented_by_signature(hook):
    sections = _sections(HOOKS_MD.read_text())
    heading = f"`{_signature(hook)}`"
    assert heading in sections, f"hooks.md needs a section '## {heading}'"
    body = sections[heading]
    assert "**When:**" in body, f"{hook}: say when it is called"
    assert "**Return:**" in body and "None" in body, f"{hook}: say what to return and what None means"


def test_hooks_md_documents_no_hook_that_does_not_exist():
    documented = set(re.findall(r"^## `(rundiff_\w+)\(", HOOKS_MD.read_text(), flags=re.M))
    assert documented == set(HOOK_NAMES)


def _test_files() -> list[Path]:
    files = list((REPO / "tests").rglob("*.py")) + list(REPO.glob("contrib/*/tests/**/*.py"))
    return [f for f in files if f.name != Path(__file__).name]


@pytest.mark.parametrize("hook", HOOK_NAMES)
def test_each_hook_is_exercised_by_a_test(hook):
    """Some test implements the hook (a throwaway plugin) and so drives the code that calls it."""
    pattern = re.compile(rf"def {hook}\(")
    users = [f.relative_to(REPO).as_posix() for f in _test_files() if pattern.search(f.read_text())]
    assert users, f"no test implements {hook}; add one under tests/plugins/"


def _load_generator():
    spec = importlib.util.spec_from_file_location("gen_detection_table",
                                                  REPO / "scripts" / "gen_detection_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _doc_rows() -> dict[str, dict[str, str]]:
    gen = _load_generator()
    text = (DOCS / "detection-order.md").read_text()
    assert gen.START in text and gen.END in text, "detection-order.md lost its table markers"
    table = text.split(gen.START, 1)[1].split(gen.END, 1)[0].strip().splitlines()
    header = [c.strip() for c in table[0].strip("|").split("|")]
    rows = {}
    for line in table[2:]:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        row = dict(zip(header, cells, strict=True))
        rows[row["adapter"].strip("`")] = row
    return rows


def test_detection_order_table_matches_the_registry(monkeypatch):
    for var in ("RUNDIFF_LOAD_PLUGINS", "RUNDIFF_DISABLE_PLUGINS"):
        monkeypatch.delenv(var, raising=False)
    live = list(Plugins().registry)
    doc = _doc_rows()
    hint = "regenerate it: python scripts/gen_detection_table.py --write"
    for spec in live:
        assert spec.name in doc, f"detection-order.md lacks adapter {spec.name}; {hint}"
        row = doc[spec.name]
        assert re.findall(r"`([^`]+):`", row["schemes"]) == list(spec.schemes), hint
        assert int(row["priority"]) == spec.priority, f"{spec.name} priority; {hint}"
        assert row["package"] == spec.package, f"{spec.name} package; {hint}"
        assert row["what it claims"].replace("\\", "") == spec.summary, f"{spec.name}; {hint}"
    names = [s.name for s in live]
    assert [n for n in doc if n in names] == names, f"rows out of detection order; {hint}"
    for name, row in doc.items():  # documented but not registered here: only an absent contrib
        if name not in names:
            assert row["package"] != "rundiff", f"built-in {name} is documented but not registered"


_EXCERPT = re.compile(r"```(?:python|toml)\n# file: (\S+)\n(.*?)```", re.S)


def test_tutorial_excerpts_are_copied_from_the_contrib_package():
    text = (DOCS / "writing-an-adapter.md").read_text()
    excerpts = _EXCERPT.findall(text)
    assert len(excerpts) >= 8
    for path, code in excerpts:
        source = (REPO / path).read_text()
        assert code in source, f"writing-an-adapter.md excerpt of {path} no longer matches:\n{code}"


def test_relative_links_in_plugin_docs_resolve():
    for doc in DOCS.glob("*.md"):
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", doc.read_text()):
            assert (doc.parent / target).exists(), f"{doc.name} links to missing {target}"


def test_cli_examples_match_the_real_output(monkeypatch, tmp_path, capsys, isolated_plugins):
    """The `rundiff detect` transcript in the docs is what the CLI prints today."""
    pytest.importorskip("rundiff_lightning_csv")
    from rundiff_core.cli import main

    run = tmp_path / "lightning_logs" / "version_0"
    run.mkdir(parents=True)
    (run / "metrics.csv").write_text("epoch,loss,step,val_acc\n0,0.9,49,\n0,0.7,99,\n0,,99,0.61\n")
    monkeypatch.chdir(tmp_path)
    assert main(["detect", "lightning_logs"]) == 0
    out = capsys.readouterr().out
    for doc in ("detection-order.md", "writing-an-adapter.md"):
        text = (DOCS / doc).read_text()
        block = text.split("$ rundiff detect lightning_logs\n", 1)[1].split("\n$", 1)[0]
        block = block.split("\n```", 1)[0]
        assert block.strip() == out.strip(), f"{doc}: update the transcript to:\n{out}"


def test_runsource_md_lists_exactly_the_public_surface():
    """The adapter's import list in runsource.md is `rundiff_core.__all__`, no more, no less."""
    import rundiff_core

    text = (DOCS / "runsource.md").read_text()
    table = text.split("<!-- exports:start -->", 1)[1].split("<!-- exports:end -->", 1)[0]
    names = {n for row in table.splitlines()[2:] for n in re.findall(r"`([A-Za-z_]\w*)`",
                                                                       row.split("|")[1])}
    assert names == set(rundiff_core.__all__), (
        f"missing: {sorted(set(rundiff_core.__all__) - names)}; "
        f"not exported: {sorted(names - set(rundiff_core.__all__))}")


def test_plugin_docs_import_only_the_public_surface():
    """Code in docs/plugins imports what adapters may import: rundiff_core and its test kit."""
    deep = re.compile(r"^\s*(?:from|import)\s+rundiff_core\.(?!testing\b)[\w.]+", re.M)
    for page in sorted(DOCS.glob("*.md")):
        for block in re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S):
            assert not deep.search(block), f"{page.name}: {deep.search(block).group(0).strip()}"
