"""`make mutate`: mutation-test the rule modules with mutmut, one module group at a time.

Why a staging tree: mutmut derives each mutant's module name from its file path, but `adapters/`
imports as `rundiff_adapters`; the staging tree lays the packages out under their import names so
the names agree. Each group runs only the tests that pin its rules (fast, and the count per module
is what docs/testing.md reports). Not part of CI: a full run takes tens of minutes on 2 cores.

Usage: python scripts/mutate.py [--head] [GROUP ...]   (default: every group; results in build/mutate/)
--head stages the last commit (`git archive HEAD`) instead of the working tree: in a checkout
others are editing, the working tree may be half-way through their change and fail unmutated.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "build" / "mutate"

# group -> (file to mutate, as imported; mutated functions (None: all); test files pinning them)
CORE = "rundiff_core"
GROUPS: dict[str, tuple[str, list[str] | None, list[str]]] = {
    "stats": (f"{CORE}/engines/stats.py",
              ["headline", "sample_std", "pooled_std", "ǁHeadlineǁstat"],
              ["tests/core/test_stats_rules.py", "tests/core/test_stats_align_redact.py",
               "tests/core/test_diff.py", "tests/core/test_verdict_rules.py"]),
    "directions": (f"{CORE}/engines/directions.py", None,
                   ["tests/core/test_directions.py"]),
    "verdicts": (f"{CORE}/engines/diff.py", ["verdict_for", "_arm_variance"],
                 ["tests/core/test_diff.py", "tests/core/test_verdict_rules.py"]),
    "redact": (f"{CORE}/redact.py", None,
               ["tests/core/test_stats_align_redact.py", "tests/core/test_redaction_everywhere.py"]),
    "align": (f"{CORE}/engines/align.py", None,
              ["tests/core/test_align_rules.py", "tests/core/test_stats_align_redact.py",
               "tests/compare/test_compare_engine.py",
               "tests/compare/test_compare_align_names_groups.py"]),
    "jsonl": (f"{CORE}/parsing/jsonl.py", ["torn_tail_cut", "read_jsonl"],
              ["tests/adapters/test_journal_tail.py", "tests/adapters/test_journal.py"]),
    "tfrecord": ("rundiff_adapters/tensorboard/tfrecord.py", None,
                 ["tests/adapters/test_tfrecord_damage.py", "tests/adapters/test_tensorboard_format.py"]),
    # the tests that read .wandb logs from files (real samples, hand-framed logs), not those that
    # first start wandb's client to write one: that takes seconds per mutant
    "wandb_framing": ("rundiff_adapters/wandb/framing.py", None,
                      ["tests/adapters/test_wandb_framing_damage.py", "tests/adapters/test_wandb.py", "-k", "realdata or crc or not_a_log or "
                       "missing_path or unusual or compat or run_folder_without or rule"]),
    "arms": (f"{CORE}/engines/arms.py", None,
             ["tests/core/test_arms_rules.py", "tests/core/test_diff.py",
              "tests/core/test_verdict_rules.py", "tests/compare/test_compare_cli.py",
              "tests/many/test_rank_ablate_report.py"]),
    # issue 33: the headline never an uninformative metric (and never skipping one that varies)
    "headline": (f"{CORE}/engines/primary.py",
                 ["uninformative", "uninformative_keys", "choose", "load_project_headline"],
                 ["tests/core/test_rules_pinned.py", "tests/core/test_rank_rules.py",
                  "tests/core/test_directions.py", "tests/many/test_rank_ablate_report.py",
                  "tests/adapters/test_layout_yolo_timm_keras.py",
                  "tests/compare/test_compare_engine.py"]),
    "student": (f"{CORE}/engines/compare/student.py", None,
                ["tests/core/test_rules_pinned.py", "tests/compare/test_compare_engine.py",
                 "tests/compare/test_compare_cli.py",
                 "tests/compare/test_compare_align_names_groups.py"]),
    # the deep search and its budgets, on the fixture trees; not the sweep of `ls` over every real
    # sample, which tests the adapters (samples land ahead of their readers: a failing baseline
    # stops mutmut) and takes most of the file's time
    "tree_budget": (f"{CORE}/tree.py", ["search_tree", "ǁTreeSearchǁsummary_lines"],
                    ["tests/core/test_rules_pinned.py", "tests/core/test_tree_search.py",
                     "-k", "not every_real_source"]),
    "not_reached": (f"{CORE}/engines/runset.py", ["reach_step", "choose_step"],
                    ["tests/core/test_rules_pinned.py", "tests/core/test_rank_rules.py",
                     "tests/many/test_rank_ablate_report.py", "tests/output/test_many_robust.py"]),
}


STAGED = ("rundiff_core", "adapters", "tests", "docs", "contrib", "README.md")


def _head_tree() -> Path:
    """The files `_stage` copies, as of the last commit (for --head)."""
    head = OUT / "head"
    shutil.rmtree(head, ignore_errors=True)
    head.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", "--format=tar", "HEAD", *STAGED], cwd=ROOT,
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(head)], input=archive, check=True)
    return head


def _stage(group: str, file: str, tests: list[str], src: Path = ROOT) -> Path:
    stage = OUT / group
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(src / "rundiff_core", stage / "rundiff_core", ignore=ignore)
    shutil.copytree(src / "adapters", stage / "rundiff_adapters", ignore=ignore)
    shutil.copytree(src / "tests", stage / "tests", ignore=ignore)
    for extra in ("docs", "contrib"):  # some tests check the docs and the contrib example
        shutil.copytree(src / extra, stage / extra, ignore=ignore)
    shutil.copy2(src / "README.md", stage / "README.md")
    config = {
        "source_paths": ["rundiff_core", "rundiff_adapters"],
        "only_mutate": [file],
        "also_copy": ["docs", "contrib", "README.md"],
        "pytest_add_cli_args_test_selection": tests,
        "pytest_add_cli_args": ["-p", "no:cacheprovider", "-q", "-x"],
        # a mutant that loops (or turns a linear scan quadratic) is stopped early: CPU time
        # beyond 5× its tests' own duration counts as a timeout (a kill)
        "timeout_multiplier": 5.0,
        "timeout_constant": 2.0,
    }
    lines = ["[tool.mutmut]"] + [f"{k} = {json.dumps(v)}" for k, v in config.items()]
    (stage / "pyproject.toml").write_text("\n".join(lines) + "\n")
    return stage


def run_group(group: str, src: Path = ROOT) -> dict[str, object]:
    file, functions, tests = GROUPS[group]
    stage = _stage(group, file, tests, src)
    module = file[:-3].replace("/", ".")
    names = [f"{module}.x{'' if f.startswith('ǁ') else '_'}{f}__mutmut_*" for f in functions or []]
    env = dict(os.environ)
    env.setdefault("RUNDIFF_REALDATA", str(ROOT.parent / "shared" / "realdata"))
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", "2", *names], cwd=stage,
                          env=env, capture_output=True, text=True)
    (stage / "run.log").write_text(proc.stdout + proc.stderr)
    res = subprocess.run([sys.executable, "-m", "mutmut", "results", "--all", "true"], cwd=stage,
                         env=env, capture_output=True, text=True)
    (stage / "results.txt").write_text(res.stdout + res.stderr)
    counts: dict[str, int] = {}
    survivors = []
    for line in res.stdout.splitlines():
        m = re.match(r"\s*(\S+): (.+)$", line)
        if m and (not names or any(fnmatch.fnmatch(m.group(1), n) for n in names)):
            counts[m.group(2)] = counts.get(m.group(2), 0) + 1
            if m.group(2) == "survived":
                survivors.append(m.group(1))
    shows = []
    for name in survivors:  # each survivor's diff, for the write-up in docs/testing.md
        shown = subprocess.run([sys.executable, "-m", "mutmut", "show", name], cwd=stage, env=env,
                               capture_output=True, text=True)
        shows.append(f"## {name}\n" + "\n".join(
            ln for ln in shown.stdout.splitlines() if ln.startswith(("-", "+")) and ln[:3] not in ("---", "+++")))
    (stage / "survivors.txt").write_text("\n".join(shows) + "\n")
    return {"group": group, "file": file, "seconds": round(time.monotonic() - t0), "counts": counts,
            "rc": proc.returncode, "staged": "HEAD" if src != ROOT else "working tree"}


def main(argv: list[str]) -> int:
    head = "--head" in argv
    groups = [a for a in argv if a != "--head"] or list(GROUPS)
    unknown = [g for g in groups if g not in GROUPS]
    if unknown:
        print(f"unknown group(s) {', '.join(unknown)}; choose from {', '.join(GROUPS)}", file=sys.stderr)
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    src = _head_tree() if head else ROOT
    for g in groups:
        r = run_group(g, src)
        print(json.dumps(r), flush=True)
        with open(OUT / "summary.jsonl", "a") as fh:
            fh.write(json.dumps(r) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
