"""Hydra's `.hydra/` folder as a config overlay (not a layout): whatever reads a run folder —
`local:`'s layouts (sniffed tables, Ultralytics, a Lightning CSV, an HF Trainer output) or the
TensorBoard source (Lightning's `lightning_logs/version_N/` events) — the Hydra job that wrote it left `.hydra/config.yaml` (the composed config), `.hydra/overrides.yaml` (the command
line's overrides: what tells the jobs of a sweep apart) and `.hydra/hydra.yaml` (Hydra's own
settings: job name and number, RUN/MULTIRUN, version).

The job folder is the run folder itself or its nearest ancestor holding `.hydra/` (at most
`MAX_UP` levels: a Lightning `lightning_logs/version_N/` or a script's `outputs/` written inside
the job folder belong to that job). The walk skips hidden folders, so `.hydra` is looked up here
by name. A multirun (`multirun/<date>/<time>/<num>/`) needs nothing more: each job folder is a
run with its own `.hydra/`, the `<time>/` folder (with `multirun.yaml`, never a run) is their
collection.

Precedence: `.hydra/config.yaml` is the base; the run's own config (`hparams.yaml`, `args.yaml`,
`params.json`, the hparams plugin, …) is merged over it key by key, and wins where both set a leaf
(it is what the framework recorded for this very run; a `.hydra/` in an ancestor may describe
the folder's last launch only). Clashing leaves with different values are named in a note.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from .bounded import read_bounded
from .configfiles import read_config_yaml
from .nested import flatten

HYDRA_DIR = ".hydra"
FILES = ("config.yaml", "overrides.yaml", "hydra.yaml")
MAX_UP = 3  # ancestors searched for `.hydra/` above a run folder
MAX_BYTES = 8 << 20  # a .hydra file larger than this is not read


@dataclass
class HydraJob:
    """What a Hydra job folder's `.hydra/` says."""

    folder: str  # the job folder (the one holding .hydra/)
    config: dict[str, Any] = field(default_factory=dict)
    overrides: list[str] = field(default_factory=list)
    hydra: dict[str, Any] = field(default_factory=dict)  # job name/num/id, mode, version, …
    notes: list[str] = field(default_factory=list)
    has_config: bool = False


def find_job(path: str, up: int = MAX_UP) -> str | None:
    """The Hydra job folder of a run at `path` (a folder, or a file inside one): the folder
    itself or its nearest ancestor within `up` levels whose `.hydra/` holds a Hydra file."""
    path = os.path.abspath(path.split("#", 1)[0])
    folder = path if os.path.isdir(path) else os.path.dirname(path)
    for _ in range(up + 1):
        hydra = os.path.join(folder, HYDRA_DIR)
        if os.path.isdir(hydra) and any(os.path.isfile(os.path.join(hydra, f)) for f in FILES):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return None


def _get(d: Any, *keys: str) -> Any:
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


def _load(path: str, notes: list[str]) -> Any:
    """A `.hydra/` file's YAML (None: absent, or too large or unreadable, said in `notes`)."""
    name = f"{HYDRA_DIR}/{os.path.basename(path)}"
    if not os.path.isfile(path):
        return None
    raw, why = read_bounded(path, MAX_BYTES)
    if raw is None:
        notes.append(f"{name}: {why}; not read")
        return None
    more: list[str] = []
    data = read_config_yaml(path, more)
    notes += [n if n.startswith(HYDRA_DIR) else f"{HYDRA_DIR}/{n}" for n in more]
    return data


def read_job(folder: str) -> HydraJob:
    """The `.hydra/` files of a job folder, each read safely (no OmegaConf: interpolations and
    `???` missing values stay as written)."""
    job = HydraJob(folder)
    base = os.path.join(folder, HYDRA_DIR)
    config = _load(os.path.join(base, "config.yaml"), job.notes)
    if isinstance(config, dict):
        job.config, job.has_config = config, True
    elif config is not None:
        job.notes.append(f"{HYDRA_DIR}/config.yaml: not a mapping; ignored")
    overrides = _load(os.path.join(base, "overrides.yaml"), job.notes)
    if isinstance(overrides, list):
        job.overrides = [str(o) for o in overrides]
    elif overrides is not None:
        job.notes.append(f"{HYDRA_DIR}/overrides.yaml: not a list; ignored")
    settings = _load(os.path.join(base, "hydra.yaml"), job.notes)
    h = settings.get("hydra") if isinstance(settings, dict) else None
    if isinstance(h, dict):
        picked = {"job_name": _get(h, "job", "name"), "job_num": _get(h, "job", "num"),
                  "job_id": _get(h, "job", "id"), "mode": h.get("mode"),
                  "version": _get(h, "runtime", "version"),
                  "output_dir": _get(h, "runtime", "output_dir"),
                  "override_dirname": _get(h, "job", "override_dirname")}
        job.hydra = {k: v for k, v in picked.items() if v not in (None, "", "???")}
        if not job.overrides and isinstance(_get(h, "overrides", "task"), list):
            job.overrides = [str(o) for o in _get(h, "overrides", "task")]
    return job


def _merge(base: dict[str, Any], top: dict[str, Any], clashes: list[str], prefix: str = "") -> dict:
    """`top` merged over `base`, key by key (nested mappings merged, leaves of `top` win); the
    dotted keys where both hold different leaves go to `clashes`."""
    out = dict(base)
    for k, v in top.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v, clashes, name + ".")
        else:
            if k in out and out[k] != v:
                clashes.append(name)
            out[k] = v
    return out


def _missing(config: dict[str, Any]) -> list[str]:
    return [k for k, v in flatten(config).items() if v == "???"]


@dataclass
class HydraOverlay:
    """A run's config with its Hydra job's merged beneath, and what to say and keep of it."""

    config: dict[str, Any]
    notes: list[str]
    meta: dict[str, Any]  # hydra_overrides, hydra (job name/num, mode, version, job_folder)
    arm: str | None  # a multirun job's arm: the sweep's job name


def hydra_overlay(run_path: str, own: dict[str, Any]) -> HydraOverlay | None:
    """The config of the run at `run_path` (`own`: what its reader found) with the Hydra job's
    `.hydra/config.yaml` beneath it, its overrides and settings for the run's meta, and the notes
    that say so; None when no `.hydra/` is found."""
    folder = find_job(run_path)
    if folder is None:
        return None
    job = read_job(folder)
    run_folder = os.path.abspath(run_path.split("#", 1)[0])
    if not os.path.isdir(run_folder):
        run_folder = os.path.dirname(run_folder)
    levels = os.path.relpath(run_folder, folder).count(os.sep) + 1 if run_folder != folder else 0
    where = f"{'../' * levels}{HYDRA_DIR}/"
    whose = "" if not levels else \
        f" (the Hydra job folder `{os.path.basename(folder)}`, {levels} level(s) up)"
    shown = ", ".join(job.overrides[:8]) + (f" and {len(job.overrides) - 8} more"
                                            if len(job.overrides) > 8 else "")
    notes = []
    clashes: list[str] = []
    config = own
    if job.has_config:
        config = _merge(job.config, own, clashes)
        notes.append(f"config from {where}config.yaml{whose}; overrides: {shown or 'none'}")
    else:
        notes.append(f"Hydra job folder{whose}: no {where}config.yaml; overrides: "
                     f"{shown or 'none'}")
    if own and job.has_config:
        notes.append("the run's own config merged over it (its values win"
                     + (f"; {len(clashes)} key(s) differ from {where}config.yaml: "
                        f"{', '.join(clashes[:5])}{'…' if len(clashes) > 5 else ''})"
                        if clashes else ")"))
    missing = _missing(job.config)
    if missing:
        notes.append(f"{where}config.yaml leaves {len(missing)} value(s) missing (`???`): "
                     f"{', '.join(missing[:5])}{'…' if len(missing) > 5 else ''}")
    if job.hydra:
        h = job.hydra
        bits = [f"job {h['job_name']!r}" if "job_name" in h else "",
                f"#{h['job_num']}" if "job_num" in h else "", h.get("mode", ""),
                f"Hydra {h['version']}" if "version" in h else ""]
        notes.append(f"{where}hydra.yaml → meta.hydra ({', '.join(b for b in bits if b)})")
    arm = str(job.hydra["job_name"]) if not levels and job.hydra.get("mode") == "MULTIRUN" \
        and "job_name" in job.hydra else None  # sweep jobs are named by number: the sweep is the arm
    return HydraOverlay(config, notes + job.notes, {
        "hydra_overrides": list(job.overrides), "hydra": {**job.hydra, "job_folder": folder}}, arm)


__all__ = ["HydraJob", "HydraOverlay", "find_job", "hydra_overlay", "read_job"]
