"""A document's parts: what in one run's JSON document is a setting (config) and what a final
number it measured (summary) — shared by the documents, column lists and files readers."""

from __future__ import annotations

from typing import Any

from rundiff_core import flatten, split_metadata

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


def document_parts(data: dict[str, Any]
                   ) -> tuple[dict[str, Any], dict[str, float], dict[str, Any], list[str]]:
    """(config, summary, metadata, notes) of one run's document: `config`/`args` sections and set
    values are config — but tracker metadata (`rundiff_core.split_metadata`) goes to metadata —,
    `metrics`/`results` sections and measured numbers the summary; lists are named."""
    config: dict[str, Any] = {}
    summary: dict[str, float] = {}
    lists: list[str] = []
    for k, v in data.items():
        low = str(k).lower()
        if isinstance(v, dict) and low in SETTING_SECTIONS:
            config.update(flatten(v, sep="."))
        elif isinstance(v, dict) and low in RESULT_SECTIONS:
            summary.update({f"{k}.{kk}": vv for kk, vv in flatten(v, sep=".").items()
                            if isinstance(vv, int | float) and not isinstance(vv, bool)})
        elif isinstance(v, list):
            lists.append(str(k))
        else:
            for kk, vv in (flatten(v, sep=".") if isinstance(v, dict) else {k: v}).items():
                if isinstance(vv, list):
                    lists.append(str(kk))
                elif measured(str(kk), vv):
                    summary[str(kk)] = vv
                else:
                    config[str(kk)] = vv
    notes = [f"{len(lists)} list(s) not read ({', '.join(lists[:4])}{' …' if len(lists) > 4 else ''})"
             ] if lists else []
    config, metadata = split_metadata(config)
    return config, summary, metadata, notes
