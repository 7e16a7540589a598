"""Which files under a path form which run, and in which named layout.

A folder is offered to the named layouts in `LAYOUTS` order; the first that recognises it claims
it (and the sub-folders it consumes, such as `checkpoint-*`). Otherwise its files are sniffed one
by one: tabular logs and result files of a folder form one run, and each text log is a run of its
own (a folder of logs from repeat runs lists one run per file). Sniffing reads a few KiB per file.
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, field

from rundiff_core import SNIFF_ENTRIES, walk_dirs

from .sniff import read_head, sniff_table
from .textlog import sniff_text

#: (layout, what it claims) in detection order inside `local:`; docs/local.md mirrors this table.
LAYOUTS = (
    ("hf-trainer", "`trainer_state.json` (a folder of `checkpoint-*` snapshots is one run)"),
    ("trackio", "trackio project databases (`<project>.db`) and their Parquet export "
                "(`<project>.parquet` + `_configs.parquet`): one run per trackio run"),
    ("sacred", "Sacred FileStorageObserver run folders: `run.json` + `config.json`/`metrics.json`"),
    ("dvclive", "`dvclive/` (`metrics.json`, `params.yaml`, `plots/metrics/**/*.tsv`), legacy "
                "`dvclive.json` + `dvclive/*.tsv`"),
    ("spinningup", "`progress.txt`/`progress.csv` + `config.json` (Spinning Up, garage, rllab)"),
    ("sb3", "`progress.csv` and `*monitor.csv` (Stable-Baselines3 logger and Monitor)"),
    ("lm-eval", "lm-evaluation-harness results files (`{\"results\": …}`, `results_*.json`)"),
    ("files", "sniffed tabular logs (CSV, TSV, whitespace, JSON lines, JSON arrays; Keras "
              "`CSVLogger`), `*results*.json`, `*meta*.json`"),
    ("text", "text logs of `key:value` / `key=value` / `key value` fields with a step"),
)

RESULT_PATTERNS = ("*results*.json", "*meta*.json", "eval*.csv", "metrics.csv", "*.metrics.csv")
CONFIG_FILES = ("config.json", "config.yaml", "config.yml", "hparams.yaml", "params.yaml",
                "args.json", "variant.json", "params.json")
SNIFF_EXTS = {"", ".csv", ".tsv", ".txt", ".log", ".out", ".jsonl", ".ndjson", ".json", ".dat",
              ".tab"}
NOT_LOGS = {"readme", "license", "licence", "requirements.txt", "dvc.lock", "dvc.yaml", ".gitignore",
            "cout.txt", "model_summary.txt", "summary.txt"}
MAX_FILES_PER_FOLDER = 5000  # files per folder considered at most (huge folders: first 5000 names)
_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
_LMEVAL_HEAD = re.compile(rb'^\s*\{\s*"results"\s*:\s*\{')


@dataclass
class RunSpec:
    """One run: the path that names it, its layout and the files it is read from."""

    path: str
    layout: str
    files: list[str] = field(default_factory=list)
    reason: str = ""
    sniffs: dict[str, object] = field(default_factory=dict)  # file → Sniff | Grammar


def is_result_file(name: str) -> bool:
    base = name.lower()
    return any(fnmatch.fnmatch(base, p) for p in RESULT_PATTERNS)


def checkpoints(folder: str, dirs: list[str]) -> list[tuple[int, str]]:
    """(step, path) of `checkpoint-N` folders holding a trainer_state.json, oldest first."""
    out = []
    for d in dirs:
        m = _CHECKPOINT.match(d)
        path = os.path.join(folder, d, "trainer_state.json")
        if m and os.path.isfile(path):
            out.append((int(m.group(1)), os.path.join(folder, d)))
    return sorted(out)


def claim_folder(folder: str, files: list[str], dirs: list[str]) -> tuple[RunSpec | None, set[str]]:
    """The named layout that claims `folder` as one run, and the sub-folders it consumes."""
    names = set(files)
    j = os.path.join
    ckpts = checkpoints(folder, dirs)
    if "trainer_state.json" in names or ckpts:
        consumed = {os.path.basename(p) for _, p in ckpts}
        return RunSpec(folder, "hf-trainer", [j(folder, f) for f in files],
                       f"HF Trainer output: trainer_state.json, {len(ckpts)} checkpoint-* "
                       "snapshot(s)"), consumed | {"runs"}
    if "run.json" in names and names & {"config.json", "metrics.json", "cout.txt"}:
        return RunSpec(folder, "sacred", [j(folder, f) for f in files],
                       "Sacred FileStorageObserver run (run.json)"), {"_sources"}
    dv = j(folder, "dvclive")
    if "dvclive" in dirs and (os.path.isfile(j(dv, "metrics.json")) or os.path.isdir(j(dv, "plots"))
                              or "dvclive.json" in names):
        return RunSpec(folder, "dvclive", [j(folder, f) for f in files],
                       "DVCLive output (dvclive/)"), {"dvclive", "plots"}
    if os.path.basename(folder) == "dvclive" and ("metrics.json" in names and "plots" in dirs):
        return RunSpec(folder, "dvclive", [j(folder, f) for f in files],
                       "DVCLive output folder"), {"plots"}
    progress = [f for f in ("progress.txt", "progress.csv") if f in names]
    config = names & {"config.json", "variant.json", "params.json"}
    if progress and config:
        return RunSpec(folder, "spinningup", [j(folder, f) for f in files],
                       f"Spinning Up / garage / rllab: {progress[0]} + {sorted(config)[0]}"), set()
    monitors = [f for f in files if f.endswith("monitor.csv")]
    if "progress.csv" in names or monitors:
        return RunSpec(folder, "sb3", [j(folder, f) for f in files],
                       "Stable-Baselines3 logger: " + ", ".join(
                           (["progress.csv"] if "progress.csv" in names else [])
                           + ([f"{len(monitors)} monitor file(s)"] if monitors else []))), set()
    lm = [f for f in files if f.endswith(".json") and (f.startswith("results_") or
                                                       _LMEVAL_HEAD.match(read_head(j(folder, f), 256)))]
    if lm:
        return RunSpec(folder, "lm-eval", [j(folder, f) for f in lm],
                       f"lm-evaluation-harness results: {len(lm)} file(s)"), set()
    return None, set()


def trackio_specs(folder: str, files: list[str]) -> list[RunSpec]:
    """One run per trackio run in a project database (or, without one, its Parquet export)."""
    from . import trackio

    dbs = [f for f in files if f.endswith(".db") and trackio.is_trackio_db(os.path.join(folder, f))]
    exports = [f for f in files if f.endswith(".parquet") and f[:-8] + ".db" not in dbs
               and trackio.is_trackio_parquet(os.path.join(folder, f))]
    specs = []
    for name in dbs + exports:
        path = os.path.join(folder, name)
        runs = trackio.db_runs(path) if name.endswith(".db") else trackio.parquet_runs(path)
        kind = "project database" if name.endswith(".db") else "Parquet export"
        for run_id, label in runs:
            specs.append(RunSpec(f"{path}#{label}", "trackio", [path],
                                 f"trackio {kind} {name}", {"run_id": run_id}))
    return specs


def sniff_files(folder: str, files: list[str]) -> list[RunSpec]:
    """Runs from a folder no named layout claims: its tables as one run, each text log as one."""
    table = RunSpec(folder, "files", reason="")
    texts: list[RunSpec] = []
    for name in files:
        low = name.lower()
        path = os.path.join(folder, name)
        if low in CONFIG_FILES or low in NOT_LOGS or low.startswith(("readme", "license")):
            continue
        if is_result_file(name):
            table.files.append(path)
            continue
        if os.path.splitext(low)[1] not in SNIFF_EXTS:
            continue
        found = sniff_table(path)
        if found is not None and (found.kind == "json" or not low.endswith(".json")):
            table.files.append(path)  # a .json file counts only as an array of records
            table.sniffs[path] = found
            continue
        grammar = sniff_text(path) if not low.endswith((".json", ".csv", ".tsv")) else None
        if grammar is not None:
            texts.append(RunSpec(path, "text", [path], grammar.describe(),
                                 {path: grammar}))
    specs = []
    if table.files:
        shown = ", ".join(os.path.basename(f) for f in table.files[:3])
        table.reason = f"{len(table.files)} result/log file(s): {shown}"
        specs.append(table)
    return specs + texts


def discover(root: str, depth: int = 4, limit: int | None = None) -> list[RunSpec]:
    """Every run at or below `root` (a file is one run; a trackio database one per run), in
    path order."""
    if os.path.isfile(root):
        folder, name = os.path.split(root)
        if name.endswith((".db", ".parquet")):
            return trackio_specs(folder, [name])
        if name == "trainer_state.json":
            return [RunSpec(root, "hf-trainer", [root], "HF Trainer state file")]
        specs = sniff_files(folder, [name])
        if not specs and name.endswith(".json") and _LMEVAL_HEAD.match(read_head(root, 256)):
            specs = [RunSpec(root, "lm-eval", [root], "lm-evaluation-harness results file")]
        for s in specs:
            s.path = root
        return specs
    out: list[RunSpec] = []
    _walk(root, depth, out, limit)
    return out


_NOT_RUNS = ("__pycache__", "node_modules", "wandb", "mlruns")  # other adapters' or nobody's


def _walk(root: str, depth: int, out: list[RunSpec], limit: int | None = None) -> None:
    """Claim runs folder by folder through the shared bounded walk (rundiff_core.walk_dirs): a
    folder a layout claims keeps the walk out of the sub-folders it consumes. Detection (`limit`)
    also caps the entries listed; an address the user gave is listed to `depth` in full."""
    walk = walk_dirs(root, max_depth=depth, max_entries=SNIFF_ENTRIES if limit is not None else None)
    for folder in walk:
        if limit is not None and len(out) >= limit:
            return  # detection only needs to know there are runs
        files = [e.name for e in folder.files() if not e.name.startswith(".")][:MAX_FILES_PER_FOLDER]
        dirs = [e.name for e in folder.dirs]
        spec, consumed = claim_folder(folder.path, files, dirs)
        tracked = trackio_specs(folder.path, files) if (spec is None or spec.layout != "hf-trainer") \
            and any(f.endswith((".db", ".parquet")) for f in files) else []  # LAYOUTS: trackio 2nd
        if tracked:
            out.extend(tracked)
        elif spec is not None:
            out.append(spec)
        else:
            out.extend(sniff_files(folder.path, files))
        folder.dirs[:] = [e for e in folder.dirs if e.name not in consumed and e.name not in _NOT_RUNS]
