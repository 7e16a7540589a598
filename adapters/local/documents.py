"""A document's parts: what in one run's JSON document is a setting (config) and what a final
number it measured (summary) — shared by the documents, column lists and files readers."""

from __future__ import annotations

import re
from typing import Any

from rundiff_core import flatten, is_metadata_key, split_metadata

from .shape import metric_like

#: Section names whose contents are settings, and whose contents are results.
SETTING_SECTIONS = ("config", "cfg", "params", "parameters", "args", "hparams", "hyperparameters",
                    "settings", "options", "opt")
RESULT_SECTIONS = ("metrics", "results", "scores", "eval", "evaluation", "summary", "test", "val")


def measured(key: str, value: Any) -> bool:
    """A number a run measured rather than one it was set to: its key names a metric (`hit@10`,
    `val_loss`, `macro_f1`), or it carries more digits than a person types (0.8055271506)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if metric_like(key):
        return True
    digits = len(repr(float(value)).lower().split("e")[0].replace("-", "").replace(".", "")
                 .lstrip("0").rstrip("0"))
    return digits >= 6


_NUMBER_CELL = re.compile(r"^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?%?$")


def printed_table(value: Any) -> bool:
    """A string that is a table a run printed (sklearn's `classification_report`, a pasted
    results table): three or more lines, most of them holding two or more numbers. It is a
    result, never a setting — a prompt template or a description is lines of words."""
    if not isinstance(value, str) or value.count("\n") < 2:
        return False
    lines = [ln for ln in value.splitlines() if ln.strip()]
    rows = sum(1 for ln in lines if sum(1 for c in ln.split() if _NUMBER_CELL.match(c)) >= 2)
    return len(lines) >= 3 and rows > 0.5 * len(lines)


def _measured_group(group: dict[str, Any]) -> bool:
    """A nested object of numbers only, most of them measured (`per_class_accuracy`: ten classes'
    0.8813…, and one class's round 1.0; an RLlib `timers` object): one quantity measured per
    class or per part, so a round value among them is measured like the rest."""
    values = list(group.values())
    if len(values) < 3 or not all(isinstance(v, int | float) and not isinstance(v, bool)
                                  for v in values):
        return False
    return sum(measured(str(k), v) for k, v in group.items()) > 0.5 * len(values)


def document_parts(data: dict[str, Any], name: str | None = None
                   ) -> tuple[dict[str, Any], dict[str, float], dict[str, Any], list[str]]:
    """(config, summary, metadata, notes) of one run's document: `config`/`args` sections and set
    values are config — but tracker metadata (`rundiff_core.split_metadata`) goes to metadata —,
    `metrics`/`results` sections and measured numbers the summary; lists and printed tables are
    named. A text value that is the run's own `name` (its section's name, its file's stem:
    `"model": "resnet50"` in section `resnet50`) names the run: metadata, not a setting."""
    config: dict[str, Any] = {}
    summary: dict[str, float] = {}
    lists: list[str] = []
    printed: list[str] = []
    named: dict[str, Any] = {}
    machine: dict[str, Any] = {}
    for k, v in data.items():
        low = str(k).lower()
        if isinstance(v, dict) and is_metadata_key(str(k)):
            # a block that says where and when it ran (`device info`, `git`): its numbers are no
            # results (`boot time`, `space left`) and its values no settings
            machine.update({f"{k}.{kk}": vv for kk, vv in flatten(v, sep=".").items()})
        elif isinstance(v, dict) and low in SETTING_SECTIONS:
            config.update(flatten(v, sep="."))
        elif isinstance(v, dict) and low in RESULT_SECTIONS:
            summary.update({f"{k}.{kk}": vv for kk, vv in flatten(v, sep=".").items()
                            if isinstance(vv, int | float) and not isinstance(vv, bool)})
        elif isinstance(v, list):
            lists.append(str(k))
        elif isinstance(v, dict) and _measured_group(v):
            summary.update({f"{k}.{kk}": vv for kk, vv in v.items()})
        else:
            for kk, vv in (flatten(v, sep=".") if isinstance(v, dict) else {k: v}).items():
                if isinstance(vv, list):
                    lists.append(str(kk))
                elif printed_table(vv):
                    printed.append(str(kk))
                elif name is not None and isinstance(vv, str) and vv == name:
                    named[str(kk)] = vv
                elif measured(str(kk), vv):
                    summary[str(kk)] = vv
                else:
                    config[str(kk)] = vv
    notes = [f"{len(lists)} list(s) not read ({_some(lists)})"] if lists else []
    if printed:
        notes.append(f"{len(printed)} printed table(s) not read ({_some(printed)}): a report "
                     "the run printed, not a setting")
    if named:
        notes.append(f"{_some(list(named))}: the run's own name → metadata, not a setting")
    config, metadata = split_metadata(config)
    metadata.update(machine)
    metadata.update(named)
    return config, summary, metadata, notes


def _some(names: list[str]) -> str:
    return ", ".join(names[:4]) + (" …" if len(names) > 4 else "")
