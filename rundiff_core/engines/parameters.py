"""What in a run's config is a parameter, a seed, or the run's own identity — one rule for grouping
runs into arms (engines.arms), for labels (engines.naming) and for the config diff (docs/names.md,
docs/diff.md#arms).

A **seed key** holds a seed (SEED_KEY_RULE); an **identity key** names or places the run instead
of configuring it (IDENTITY_KEYS); what is **not a parameter** at all (NON_PARAMETERS: callables,
plumbing, identity, the run itself, a tracker's bookkeeping) never enters an arm key, a label or a
config diff. `[arms]` in rundiff.toml adds patterns (ArmRules).
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .naming import named_by_path

if TYPE_CHECKING:
    from ..model import Run

SEED_KEY_RULE = "the key's last component, lower-cased without `_`/`-`, ends in `seed`"
"""`seed`, `random_seed`, `manualSeed`, `rng_seed`, `global_seed`, `data_seed`, `opt.manualSeed`…"""

_KEY_SPLIT = re.compile(r"[./]")


def key_leaf(key: str) -> str:
    """A dotted or slashed key's last part (`optim.lr` → `lr`)."""
    return _KEY_SPLIT.split(key)[-1]


def squash(text: str) -> str:
    """Lower-case without `_` and `-` (`manual_Seed` → `manualseed`)."""
    return text.lower().replace("_", "").replace("-", "")


def is_seed_key(key: str, rules: ArmRules | None = None) -> bool:
    """True for a config key that holds a seed (see SEED_KEY_RULE, plus `[arms] seed_keys`)."""
    return _is_seed_key(key, rules.seed_keys if rules else ())


@functools.lru_cache(maxsize=8192)  # a fleet's runs share their keys: decide each key once
def _is_seed_key(key: str, extra: tuple[str, ...]) -> bool:
    return squash(key_leaf(key)).endswith("seed") or bool(extra and _matches(key, extra))


# -- run-identity keys ----------------------------------------------------------------------------
IDENTITY_KEYS: dict[str, str] = {
    "paths and dirs": r"(output|out|log|logging|checkpoint|checkpoints|ckpt|save|work|working|run|"
                      r"exp|experiment|result|results|default_root|tensorboard|tb|wandb|cache|"
                      r"artifact|artifacts)_?(dir|dirs|path|folder|directory|root|location|uri)"
                      r"|dirpath|logdir|outdir|workdir|savedir|output|out|resume_from_checkpoint",
    "run names and ids": r"(run|job|trial|experiment|exp)_?(name|id|uuid)|uuid|slurm_job_?id",
    "timestamps and dates": r"timestamp|time_stamp|date|datetime|start_time|end_time|start_date|"
                            r"created|created_at|started_at|updated_at|launch_time|launched_at|"
                            r"run_date|now",
    "hostnames": r"host|hostname|host_name|node|nodename|node_name|machine|slurm_nodelist|"
                 r"master_addr|master_port|pid",
    "tracker ids": r"(wandb|mlflow|neptune|comet|clearml|aim)_?(run_?)?(id|name|url|path|dir)",
}
"""Leaf-name patterns (full match, case-insensitive, `-` read as `_`) of keys that name a run
rather than configure it. Also identity: any key under a `wandb`/`mlflow`/`neptune`/`comet`/
`clearml`/`logger` parent whose leaf is `id`, `name`, `run_id`, `run_name`, `dir`, `version` or
`url`; and any string value equal to the run's name, id, path or folder name, or a path ending in
the run's folder name. `[arms] identity_keys` in rundiff.toml adds patterns."""

_IDENTITY = re.compile("|".join(f"(?:{p})" for p in IDENTITY_KEYS.values()), re.I)
_TRACKER_PARENTS = {"wandb", "mlflow", "neptune", "comet", "clearml", "logger"}
_TRACKER_LEAVES = {"id", "name", "run_id", "run_name", "dir", "version", "url"}


def is_identity_key(key: str, rules: ArmRules | None = None) -> bool:
    """True for a config key that names or places the run instead of configuring it."""
    return _is_identity_key(key, rules.identity_keys if rules else (), rules.keep_keys if rules else ())


@functools.lru_cache(maxsize=8192)
def _is_identity_key(key: str, extra: tuple[str, ...], keep: tuple[str, ...]) -> bool:
    if keep and _matches(key, keep):
        return False
    parts = [p.lower().replace("-", "_") for p in _KEY_SPLIT.split(key)]
    if _IDENTITY.fullmatch(parts[-1]):
        return True
    if len(parts) > 1 and parts[-2] in _TRACKER_PARENTS and parts[-1] in _TRACKER_LEAVES:
        return True
    return bool(extra and _matches(key, extra))


def _matches(key: str, patterns: Sequence[str]) -> bool:
    leaf = key_leaf(key)
    return any(fnmatch.fnmatchcase(key, p) or fnmatch.fnmatchcase(leaf, p) for p in patterns)


@dataclass(frozen=True)
class ArmRules:
    """Extra seed/identity key patterns from the `[arms]` table of rundiff.toml (globs matched
    against the dotted key and its last component). `keep_keys` exempts keys from the identity
    rule."""

    seed_keys: tuple[str, ...] = ()
    identity_keys: tuple[str, ...] = ()
    keep_keys: tuple[str, ...] = ()
    project_file: str | None = None


ARMS_TABLE_KEYS = ("seed_keys", "identity_keys", "keep_keys")


def load_arm_rules(project_file: str | None = None) -> ArmRules:
    """The `[arms]` table of `project_file` (default: the nearest rundiff.toml), else no extras."""
    from ..errors import InputError
    from .project import find_project_file, project_table

    path = project_file or find_project_file()
    if not path:
        return ArmRules()
    table = project_table(path, "arms", hint="see docs/diff.md, Arms")
    if not isinstance(table, dict):
        raise InputError(f"{path}: [arms] must be a table", hint='e.g. identity_keys = ["*_stamp"]')
    unknown = sorted(set(table) - set(ARMS_TABLE_KEYS))
    if unknown:
        raise InputError(f"{path}: unknown key {unknown[0]!r} in [arms]",
                         hint=f"[arms] takes {', '.join(ARMS_TABLE_KEYS)}")
    out: dict[str, tuple[str, ...]] = {}
    for name in ARMS_TABLE_KEYS:
        value = table.get(name, [])
        value = [value] if isinstance(value, str) else value
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InputError(f"{path}: [arms] {name} must be a list of key patterns")
        out[name] = tuple(value)
    return ArmRules(**out, project_file=path)


_DISTINCT = re.compile(r"[\d._/\\-]")  # a name with a digit or a separator names one run


def _self_values(run: Run) -> set[str]:
    """The strings that name this run: its name, id, address and path, and the last part of
    each — the bare ones only when distinctive (`version_11`, `exp-a`, `abc12345`): a folder
    named `train` does not make `mode: train` name the run."""
    path = run.meta.get("path") if isinstance(run.meta, Mapping) else None
    # a name the tracker gave (lm-eval's model, a W&B display name) may be a setting's value
    values = {run.run_id, run.address, run.address.split(":", 1)[-1]}
    if named_by_path(run):
        values.add(run.name)
    if isinstance(path, str) and path:
        values |= {path, os.path.basename(os.path.normpath(path))}
    return {v for v in values if isinstance(v, str) and v and _DISTINCT.search(v)}


def _names_run(text: Any, own: set[str], folder: str | None) -> bool:
    """True for a config key or value that names or places this run rather than configuring it:
    one of its names (`_self_values`), a path ending in its folder, or — when the folder's name is
    distinctive (`ppo_s3`, `version_11`) — any text holding that folder as a path part
    (`./data/ppo_s3/progress.txt`, a logger's repr of its open file). A plain folder name like
    `train` counts only at a path's end, and never inside a word (`sc2` does not name run `2`)."""
    if not isinstance(text, str) or not text:
        return False
    if text in own or text.rstrip("/\\") in own:
        return True
    if not folder or len(folder) < 3:
        return False
    tail = text.rstrip("/\\").replace("\\", "/")
    return tail.endswith("/" + folder) or (
        bool(_DISTINCT.search(folder)) and folder in tail.split("/"))


# -- parameters -----------------------------------------------------------------------------------
NON_PARAMETERS: dict[str, str] = {
    "objects": "callables (`<function f at 0x…>`) and the run's plumbing (a logger, an open "
               "file): they name a process, not a setting (an instance of another class is its "
               "class: `<torch.optim.SGD object at 0x…>` is `torch.optim.SGD`)",
    "identity": "paths, output folders, run names and ids, hosts and timestamps "
                "(IDENTITY_KEYS, a value that is a date and time)",
    "the run itself": "a key or value that names or places this run (its name, id, folder)",
    "tracker": "a tracker's own bookkeeping (`_wandb`, `mlflow.*`)",
}
"""What is not a parameter, for every command: the config diff hides these (counting them;
`--all-keys` shows them), arm keys and labels never use them — one rule for grouping and display."""

_INSTANCE = re.compile(r"^<(?P<cls>[A-Za-z_][\w.]*) object at 0x(?:[0-9a-fA-F]+|…)>$")
"""An instance's repr: its class is a setting (Adam or SGD), its address is not."""
_PLUMBING = re.compile(r"log|writer|file|stream|io\b|handler|lock|thread|process|pool|queue|"
                       r"socket|connection|client|session|tracker|summary|callback", re.I)
"""Classes whose instances are a run's plumbing (a logger, an open file), not a choice."""
_OBJECT_TEXT = re.compile(r"<[\w.]+ object at 0x|<(?:function|bound method|built-in|class|module|"
                          r"lambda|generator|_io\.)\b[^>]*>| at 0x(?:[0-9a-fA-F]+|…)>|<[\w.]+ name=")
_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T _]\d{2}:\d{2}|^\d{8}[-_]\d{6}$")
_TRACKER_KEY = re.compile(r"^_?(?:wandb|mlflow)(?:[._/]|$)", re.I)


def parameter_value(value: Any) -> Any:
    """The setting an object repr stands for: `<torch.optim.Adam object at 0x7f…>` →
    `torch.optim.Adam`; any other value as it is."""
    if isinstance(value, str) and value.startswith("<") and (m := _INSTANCE.match(value)):
        cls = m.group("cls")
        if not _PLUMBING.search(cls.rsplit(".", 1)[-1]):
            return cls
    return value


def non_parameter(key: str, value: Any, own: set[str], folder: str | None,
                  rules: ArmRules | None = None) -> str | None:
    """Why a flat config entry is not a parameter (a NON_PARAMETERS kind), else None. An
    instance of a class that is a choice (`parameter_value`) is a parameter."""
    if _OBJECT_TEXT.search(key) or (isinstance(value, str) and _OBJECT_TEXT.search(value)
                                    and parameter_value(value) is value):
        return "objects"
    if _TRACKER_KEY.match(key):
        return "tracker"
    if is_identity_key(key, rules) or (isinstance(value, str) and _DATETIME.match(value)):
        return "identity"
    if _names_run(key, own, folder) or _names_run(value, own, folder):
        return "the run itself"
    return None


def parameters(run: Run, rules: ArmRules | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """(parameters, hidden): the run's flat config split into what the user set and what is not a
    parameter (key → its NON_PARAMETERS kind). Seed keys are parameters here (a diff shows a
    changed seed); `arm_config` drops them."""
    own = _self_values(run)
    path = run.meta.get("path") if isinstance(run.meta, Mapping) else None
    folder = os.path.basename(os.path.normpath(path)) if isinstance(path, str) and path else None
    params: dict[str, Any] = {}
    hidden: dict[str, str] = {}
    for k, v in run.flat_config.items():
        why = non_parameter(k, v, own, folder, rules)
        if why is None:
            params[k] = parameter_value(v)
        else:
            hidden[k] = why
    return params, hidden




def seed_key_order(key: str) -> tuple[bool, int, str]:
    """How a seed key ranks when a config has several: exactly `seed` first, then the shallowest."""
    return squash(key_leaf(key)) != "seed", len(_KEY_SPLIT.split(key)), key


__all__ = ["ARMS_TABLE_KEYS", "IDENTITY_KEYS", "NON_PARAMETERS", "SEED_KEY_RULE", "ArmRules",
           "is_identity_key", "is_seed_key", "key_leaf", "load_arm_rules", "non_parameter",
           "parameter_value", "parameters", "seed_key_order", "squash"]
