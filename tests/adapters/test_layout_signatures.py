"""Layout signatures and the text-log check: cheap tests that keep a sniff from importing a parser.

A `LayoutSpec.signature` names what a layout's `claim` (and `claim_file`) cannot do without; a folder
none of whose names matches is not offered to that layout, whose module then is not imported
(adapters/local/discover.py). `sniff.may_be_text_log` says when `textlog.sniff_text` cannot find a
log, so the `files` layout sniffs one-line text files without importing the grammars. Both must
be necessary conditions only: these tests check each on every real folder in the repository (and
the shared real data when present), on generated folders, and that discovery finds the same runs
with the checks as without them.
"""

from __future__ import annotations

import fnmatch
import importlib
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rundiff_adapters.local import discover
from rundiff_adapters.local.layouts import BUILTIN
from rundiff_adapters.local.shapes import SHAPE_READERS
from rundiff_adapters.local.shapes.files import sniff_files
from rundiff_adapters.local.sniff import SNIFF_BYTES, may_be_text_log, read_head

from rundiff_core import LayoutFolder, PluginError, walk_dirs
from rundiff_core.layouts import LayoutRegistry, LayoutSpec, SignatureNames, glob_match

REPO = Path(__file__).resolve().parents[2]
REALDATA = Path(os.environ.get("RUNDIFF_REALDATA", REPO.parent / "shared" / "realdata"))
ROOTS = [REPO / "tests" / "fixtures", REPO / "tests" / "trajectories" / "fixtures", REALDATA]
SIGNED = [spec for spec in BUILTIN + SHAPE_READERS if spec.signature]


def _folders(root: Path):  # noqa: ANN202 - (path, files, dirs) as discover offers them
    for folder in walk_dirs(str(root), max_depth=None, max_entries=None):
        files = [e.name for e in folder.files() if not e.name.startswith(".")]
        yield folder.path, files[:discover.MAX_FILES_PER_FOLDER], [e.name for e in folder.dirs]


def _real_folders() -> list[tuple[str, list[str], list[str]]]:
    return [f for root in ROOTS if root.is_dir() for f in _folders(root)]


def _assert_signatures_hold(path: str, files: list[str], dirs: list[str]) -> None:
    names = SignatureNames([os.path.basename(path), *files, *dirs])
    view = LayoutFolder(path, files, dirs)
    for spec in SIGNED:
        module = importlib.import_module(spec.module)
        got = module.claim(view)
        if got is not None and got.runs:
            assert spec.may_claim(names), f"{spec.name} claimed {path} outside its signature"
        claim_file = getattr(module, "claim_file", None)
        for name in files if claim_file else ():
            if claim_file(os.path.join(path, name)):
                assert spec.may_claim([name]), f"{spec.name} claimed {name} outside its signature"


def test_every_real_folder_a_layout_claims_matches_its_signature():
    folders = _real_folders()
    assert len(folders) > 50
    for path, files, dirs in folders:
        _assert_signatures_hold(path, files, dirs)


def _all_layouts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(LayoutSpec, "may_claim", lambda self, names: True)


def test_discovery_finds_the_same_runs_with_signatures_as_without(monkeypatch):
    roots = [str(r) for r in ROOTS if r.is_dir()]
    files = [os.path.join(p, f) for p, fs, _ in _real_folders() for f in fs[:3]]
    with_signatures = [discover.discover(r, depth=6) for r in roots]
    single = [discover.claim_file(f) for f in files]
    _all_layouts(monkeypatch)
    assert [discover.discover(r, depth=6) for r in roots] == with_signatures
    assert [discover.claim_file(f) for f in files] == single


# -- generated folders: names and contents each layout looks for, and near misses ------------------
_CONTENT = {
    ".json": ['{"results": {"task": {"acc,none": 0.5}}}', '{"a": 1}', "",
              '{"iteration": 1, "total_loss": 2.0}\n{"iteration": 2, "total_loss": 1.0}\n',
              '{"loss": [1.0, 0.5], "val_loss": [1.1, 0.9]}', '"{\'loss\': [1.0, 0.5]}"',
              '{"env_info": "x", "seed": 1}\n{"mode": "train", "epoch": 1, "iter": 1, "loss": 1}\n'],
    ".csv": ["training_iteration,time_total_s,reward\n1,2.0,3\n2,4.0,5\n", "epoch,loss\n0,1\n1,0.5\n",
             "r,l,t\n1,2,3\n4,5,6\n", "epoch,train_loss,eval_top1\n0,1,2\n",
             "epoch,metrics/mAP50-95(B)\n0,0.1\n1,0.2\n"],
    ".txt": ["step 1 loss 0.5\nstep 2 loss 0.4\n", "0\n", "Epoch\tAverageEpRet\n0\t1.0\n1\t2.0\n"],
    ".yaml": ["lr: 0.1\n", "epochs: 3\nmodel: yolov8n.pt\n"],
    "": ["", "x"],
}
_FILES = ["trainer_state.json", "TRAINER_STATE.JSON", "run.json", "config.json", "metrics.json",
          "cout.txt", "dvclive.json", "params.json", "result.json", "progress.csv", "progress.txt",
          "variant.json", "0.monitor.csv", "monitor.csv", "results_2024-01-01T00-00-00.json",
          "results.json", "x.db", "x.parquet", "results.csv", "args.yaml", "opt.yaml",
          "summary.csv", "config.yaml", "log.txt", "last_checkpoint", "scalars.json",
          "20240101_120000.json", "20240101_120000.log.json", "history.json", "Hist.JSON",
          "notes.txt", "data.csv", "metrics.jsonl"]
_DIRS = ["checkpoint-12", "checkpoint-x", "last-checkpoint", "dvclive", "plots", "vis_data",
         "20240101_120000", "2024010_120000", "runs", "weights", "inference"]
_INSIDE = {"checkpoint-12": ["trainer_state.json"], "last-checkpoint": ["trainer_state.json"],
           "dvclive": ["metrics.json"], "vis_data": ["scalars.json"],
           "20240101_120000": ["vis_data/scalars.json"]}


def _content(name: str, pick: int) -> str:
    options = _CONTENT.get(os.path.splitext(name)[1].lower(), _CONTENT[""])
    return options[pick % len(options)]


@given(st.sampled_from(["run", "dvclive", "vis_data", "20240101_120000", "exp"]),
       st.lists(st.tuples(st.sampled_from(_FILES), st.integers(0, 6)), max_size=6),
       st.lists(st.sampled_from(_DIRS), max_size=3))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_a_generated_folder_a_layout_claims_matches_its_signature(base, files, dirs):
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, base)
        os.makedirs(root)
        for name, pick in files:
            with open(os.path.join(root, name), "w", encoding="utf-8") as fh:
                fh.write(_content(name, pick))
        for d in dirs:
            os.makedirs(os.path.join(root, d), exist_ok=True)
            for inner in _INSIDE.get(d, []):
                os.makedirs(os.path.dirname(os.path.join(root, d, inner)), exist_ok=True)
                with open(os.path.join(root, d, inner), "w", encoding="utf-8") as fh:
                    fh.write('{"global_step": 3, "log_history": []}' if "trainer" in inner
                             else '{"loss": 1.0, "step": 1}\n')
        for path, names, subdirs in _folders(Path(root)):
            _assert_signatures_hold(path, names, subdirs)


# -- the glob matching itself ---------------------------------------------------------------------
_GLOB = st.text(alphabet="ab.*?", max_size=7)
_NAME = st.text(alphabet="ab.\n", max_size=8)


@given(_NAME, _GLOB)
@settings(max_examples=2000, deadline=None)
def test_signature_globs_match_as_fnmatchcase(name, glob):
    assert glob_match(name, glob) == fnmatch.fnmatchcase(name, glob)


@given(st.lists(st.text(alphabet="aB.[]*?", max_size=6), max_size=4),
       st.lists(st.text(alphabet="aB.[]*?", min_size=1, max_size=6), max_size=3))
@settings(max_examples=500, deadline=None)
def test_a_signature_matches_as_fnmatch_over_lower_cased_names(names, signature):
    expected = any(fnmatch.fnmatchcase(n.lower(), g.lower()) for g in signature for n in names)
    assert SignatureNames(names).match(tuple(signature)) == expected


@given(st.text(alphabet="ab.*?[]", max_size=8),
       st.lists(st.text(alphabet="ab.*?[]", max_size=6), max_size=4))
@settings(max_examples=1000, deadline=None)
def test_file_name_rules_match_as_fnmatch(name, patterns):
    """The shape readers' file-name rules (`*results*.json`) ask SignatureNames of one name."""
    assert SignatureNames([name]).match(tuple(patterns)) == any(fnmatch.fnmatch(name, p) for p in patterns)


def test_a_signature_that_is_not_a_tuple_of_globs_is_refused():
    for bad in ("run.json", ("run.json", ""), (3,)):
        with pytest.raises(PluginError, match="signature"):
            LayoutRegistry().register(LayoutSpec("x", "pkg.mod", "a layout", signature=bad))


def test_a_layout_without_a_signature_is_asked_about_every_folder():
    spec = LayoutSpec("x", "pkg.mod", "a layout")
    assert spec.may_claim([]) and spec.may_claim(["anything"])
    assert LayoutSpec("y", "m", "s", signature=("run.json",)).may_claim(["RUN.JSON"])
    assert not LayoutSpec("y", "m", "s", signature=("run.json",)).may_claim(["run.jsonl"])


# -- text logs: one line is no log ----------------------------------------------------------------
_LINES = ["step 1 loss 0.5", "step: 2, loss: 0.25", "loss=0.1 step=3", "1 loss 0.5", "", "   ",
          "{'loss': 1.0, 'epoch': 0.1}", "epoch 001:   10 / 100 loss=1.0, num_updates=10",
          "1|10|Loss: 0.5", "Step 1 | loss:0.5 lr:0.1", "0123456789abcdef", "0", "\x00\x00\x00",
          "a\rstep 4 loss 0.2\rstep 5 loss 0.1", "\ufeffstep 6 loss 0.3", "\x85step 7 loss 0.1"]


@given(st.lists(st.sampled_from(_LINES), max_size=4), st.sampled_from(["\n", "\r\n", "\r", "\x0c"]),
       st.booleans())
@settings(max_examples=400, deadline=None)
def test_no_text_log_is_missed_by_the_cheap_check(lines, newline, trailing):
    from rundiff_adapters.local.textlog import sniff_text

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "train.log")
        with open(path, "w", encoding="utf-8", newline="") as fh:
            fh.write(newline.join(lines) + (newline if trailing else ""))
        if not may_be_text_log(read_head(path)):
            assert sniff_text(path) is None, lines


def test_a_large_file_is_left_to_the_text_log_sniff(tmp_path):
    path = tmp_path / "big.log"
    path.write_text("x" * SNIFF_BYTES)
    assert may_be_text_log(read_head(str(path)))


def test_the_files_layout_finds_the_same_runs_without_the_cheap_check(monkeypatch):
    folders = _real_folders()
    found = [sniff_files(path, files) for path, files, _ in folders]
    monkeypatch.setattr("rundiff_adapters.local.shapes.files.may_be_text_log", lambda head: True)
    assert [sniff_files(path, files) for path, files, _ in folders] == found
