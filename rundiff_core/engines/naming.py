"""The naming rule, once for every command, the API, MCP and the report (docs/names.md).

A **run** is called what its tracker calls it (a W&B display name, an MLflow `runName`, a Neptune
name, an Inspect task/model), else by the shortest part of its path that tells it apart from the
other runs of the same command, relative to their common folder (`TD3/Hopper-v2/td3_s2521`).
An **arm** is called by the folder its seeds share and no other arm has (`TD3/Hopper-v2`); else,
for one run, by the run's name; else by the ≤ 3 parameters that best tell the arms apart
(`lr=0.001, layers=4`); else by its members (`version_11…13 (3 seeds)`). Every name fits in
NAME_MAX characters. Addresses and absolute paths stay in JSON (`address`), never in a table or
a legend.

This module imports no pandas and no other engine: `arms` imports it (an arm here is anything
with `seeds`, `primary`, `n`, `members`, `label` and `differs`).
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..model import Run

NAME_MAX = 40
"""Characters a run or arm name may take: a table column or a legend entry, not a path."""
LABEL_MAX_KEYS = 3
"""Parameters an arm label names at most: the few that tell the arms apart, never `+N more`."""
VALUE_MAX = 16
"""Characters a parameter value takes in a label before it is shortened with `…`."""

_DIGITS_END = re.compile(r"\d+$")
_COUNTER_ONLY = re.compile(r"^(?:seed|s|run|rep|trial|version|v)?[-_]?\d+$", re.I)
"""A name that is only a counter (`seed-0`, `run_3`, `7`): no name on its own, without its folder."""
_DIGITS_START = re.compile(r"^\d+")
_SCHEME = re.compile(r"^[A-Za-z][\w+.-]*:(?!//)")
_WINDOWS = re.compile(r"^[A-Za-z]:[\\/]")


def natural_key(name: str) -> list[Any]:
    """Sort key that puts `run2` before `run10`."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


# -- runs -----------------------------------------------------------------------------------------
def place(address: str) -> tuple[str, ...] | None:
    """Where a run lives, as path parts, from its address (`local:/a/runs/x` → (a, runs, x); a
    run within a file `…/log.txt#2` → (…, `log.txt#2`)); None for an address that is no local
    path (`wandb:entity/project/id`, an HTTP server)."""
    rest = _SCHEME.sub("", address, count=1) if not _WINDOWS.match(address) else address
    rest = rest[len("file://"):] if rest.startswith("file://") else rest
    path, _, fragment = rest.partition("#")
    if not (path.startswith("/") or _WINDOWS.match(path)):
        return None
    parts = tuple(p for p in re.split(r"[\\/]+", path) if p and p != ".")
    if fragment and parts:
        parts = (*parts[:-1], f"{parts[-1]}#{fragment}")
    return parts or None


def run_place(run: Any) -> tuple[str, ...] | None:
    """Where a run lives (`place`): where it was logged, for a run read back from an export
    (`meta["origin_address"]`), else its own address."""
    meta = run.meta if isinstance(getattr(run, "meta", None), Mapping) else {}
    origin = meta.get("origin_address")
    return place(origin) if isinstance(origin, str) and origin else place(run.address)


def _name_parts(name: str) -> tuple[str, ...]:
    """A name's path parts as `place` splits an address: a `#fragment` stays on its file."""
    path, hash_, fragment = name.strip().partition("#")
    parts = tuple(p for p in re.split(r"[\\/]+", path) if p and p != ".")
    if hash_ and parts:
        parts = (*parts[:-1], f"{parts[-1]}#{fragment}")
    return parts


def named_by_path(run: Run) -> bool:
    """True when a run's name is only its path (absolute, relative to where rundiff ran, or the
    tail of its place) — a name the tracker gave it is kept as given."""
    where = run_place(run)
    if where is None or not run.name:
        return False
    name = run.name.strip()
    parts = _name_parts(os.path.abspath(name) if os.path.isabs(name) or name.startswith("..")
                        else name)
    return bool(parts) and where[-len(parts):] == parts


def fit(text: str, limit: int = NAME_MAX, *, keep_end: bool = True) -> str:
    """`text` in at most `limit` characters: a path keeps its last part whole (where the seed and
    the run are) and shortens the longest other part in its middle
    (`imagenet-resn…from-vit-l/seed-0`); a list of parameters keeps its start."""
    if len(text) <= limit:
        return text
    if not keep_end:
        return text[: limit - 1] + "…"
    parts = text.split("/")
    while len(parts) > 1 and len("/".join(parts)) > limit:
        i = max(range(len(parts) - 1), key=lambda j: len(parts[j]))
        over = len("/".join(parts)) - limit
        if len(parts[i]) <= 3:
            del parts[i]
            continue
        keep = max(len(parts[i]) - over - 1, 2)
        parts[i] = parts[i][: (keep + 1) // 2] + "…" + parts[i][len(parts[i]) - keep // 2:]
        if len(parts[i]) <= 3 or keep == 2:
            parts[i] = "…"
    text = "/".join(parts)
    # the start says what it is, the end which one
    return text if len(text) <= limit else _cut_middle(text, limit, (limit - 1) // 3)


def _cut_middle(text: str, limit: int, head: int) -> str:
    """`text` as its first `head` characters, `…`, and as much of its end as `limit` leaves."""
    return text[:head] + "…" + text[len(text) - (limit - 1 - head):]


def _fit_given(text: str, limit: int = NAME_MAX) -> str:
    """A name a tracker gave, in `limit` characters: its start and its end kept, the middle cut
    (`inspect_eva…openai/gpt-4o`) — it is no path, its `/` are part of the name."""
    if len(text) <= limit:
        return text
    return _cut_middle(text, limit, (limit - 1) // 2)


def _common_prefix(places: Sequence[tuple[str, ...]]) -> int:
    n = min(len(p) for p in places)
    for i in range(n):
        if len({p[i] for p in places}) > 1:
            return i
    return n


def _tails(rels: Sequence[tuple[str, ...]]) -> list[str]:
    """Each relative path whole when all fit NAME_MAX; else, with one run per folder, the folder;
    else the fewest last parts that tell them apart, when those fit; else its long parts
    shortened in the middle (`fit`)."""
    whole = ["/".join(r) for r in rels]
    if all(len(w) <= NAME_MAX for w in whole):
        return whole
    parents = ["/".join(r[:-1]) for r in rels]
    if all(parents) and len(set(parents)) == len(set(whole)):
        # one run per folder (a dated log file in each): the folder tells them apart
        return [fit(p) for p in parents]
    for k in range(1, max(len(r) for r in rels)):  # the fewest last parts, when they fit whole
        tails = ["/".join(r[-k:]) for r in rels]
        if len(set(tails)) == len(set(whole)) and all(len(t) <= NAME_MAX for t in tails) \
                and not any(_COUNTER_ONLY.match(t) for t in tails):
            return tails
    fitted = [fit(w) for w in whole]
    if len(set(fitted)) == len(set(whole)):
        return fitted
    for k in range(1, max(len(r) for r in rels) + 1):
        tails = ["/".join(r[-k:]) for r in rels]
        if len(set(fit(t) for t in tails)) == len(set(whole)):
            return [fit(t) for t in tails]
    return fitted


def run_names(runs: Sequence[Run]) -> list[str]:
    """The name each run goes by among `runs` (one command's runs): its tracker's name, else its
    path relative to the runs' common folder (the shortest tail that still tells them apart when
    the paths are long). Names two runs share get the shortest part of their place that differs."""
    places = [run_place(r) for r in runs]
    by_path = [i for i, r in enumerate(runs) if places[i] is not None and named_by_path(r)]
    names = [_fit_given(r.name or r.run_id) for r in runs]
    located = sorted({places[i] for i in by_path})  # type: ignore[misc]
    if located:
        cut = _common_prefix(located) if len(located) > 1 else len(located[0]) - 1
        cut = min(cut, min(len(p) for p in located) - 1)  # a run is never named by nothing
        rels = {p: p[cut:] for p in located}
        short = dict(zip(located, _tails([rels[p] for p in located]), strict=True))
        for i in by_path:
            names[i] = short[places[i]]  # type: ignore[index]
    return _told_apart(runs, names)


def _told_apart(runs: Sequence[Run], names: list[str]) -> list[str]:
    """Names shared by different runs, each with what tells them apart: the last part of its
    place when those differ (`openai/gpt-4o [log_formats.eval]`), else its id's start
    (`amusing-smelt-908 [24d6bfc3]`)."""
    by_name: dict[str, list[int]] = {}
    for i, (r, n) in enumerate(zip(runs, names, strict=True)):
        if r.address not in {runs[j].address for j in by_name.get(n, [])}:
            by_name.setdefault(n, []).append(i)
    out = list(names)
    for n, idx in by_name.items():
        if len(idx) < 2:
            continue
        lasts = [os.path.splitext((run_place(runs[i]) or ("",))[-1])[0] for i in idx]
        tags = lasts if len(set(lasts)) == len(lasts) and all(lasts) else \
            [str(runs[i].run_id or runs[i].address)[:8] for i in idx]
        for i, tag in zip(idx, tags, strict=True):
            tag = _fit_given(tag, 14)
            out[i] = f"{_fit_given(n, NAME_MAX - len(tag) - 3)} [{tag}]"
    for i, r in enumerate(runs):  # the same run met twice keeps one name
        first = next(j for j in range(len(runs)) if runs[j].address == r.address)
        out[i] = out[first]
    return out


def name_runs(runs: Sequence[Run]) -> None:
    """Give each run (`Run.name`) the name it goes by among `runs`; the address keeps where it is.
    Idempotent: a name already shortened from the path is still read as a path."""
    unique = list({id(r): r for r in runs}.values())
    for run, name in zip(unique, run_names(unique), strict=True):
        run.name = name


def found_in(addresses: Sequence[str], *, shared: bool = False) -> str:
    """The one line that says where a command's runs are: their common folder (and the other
    stores, by their address without the run part) — the only place a path appears besides JSON.
    `shared` (a page to share): the folder's last two parts, never the machine's absolute path."""
    paths = [p for a in addresses if (p := place(a)) is not None]
    where: list[str] = []
    if paths:
        common = paths[0][: _common_prefix(paths)] if len(paths) > 1 else paths[0][:-1]
        common = tuple(c.split("#", 1)[0] for c in common)
        if shared:
            common = common[-2:]
            where.append(("…/" if common else "") + "/".join(common))
        else:
            where.append(("/" if not _WINDOWS.match(common[0] if common else "") else "")
                         + "/".join(common))
    for a in addresses:
        if place(a) is None:
            store = a.rsplit("/", 1)[0] if a.count("/") > 1 else a
            if store not in where:
                where.append(store)
    return ", ".join(where)


# -- arms -----------------------------------------------------------------------------------------
def members_label(runs: Sequence[Run], *, short: bool = True) -> str:
    """An arm named by its members: `version_11, version_12, version_13`; with `short`, a run of
    consecutive numbers reads `version_11…13 (3 seeds)`. Never a bare common prefix."""
    names = sorted((r.name for r in runs), key=natural_key)
    if len(names) == 1:
        return names[0]
    full = ", ".join(names)
    if not short:
        return full
    prefix = os.path.commonprefix(names)
    prefix = prefix[: len(prefix) - len(m.group())] if (m := _DIGITS_END.search(prefix)) else prefix
    suffix = os.path.commonprefix([n[len(prefix):][::-1] for n in names])[::-1]
    suffix = suffix[len(m.group()):] if (m := _DIGITS_START.match(suffix)) else suffix
    middles = [n[len(prefix): len(n) - len(suffix)] for n in names]
    n = len(names)
    if all(x.isdigit() for x in middles):
        numbers = [int(x) for x in middles]
        if numbers == list(range(numbers[0], numbers[0] + n)):
            return f"{names[0]}…{middles[-1]}{suffix} ({n} seeds)"
    if n <= 3:
        return full
    return f"{names[0]}, {names[1]}, …, {names[-1]} ({n} seeds)"


def _value_text(value: Any) -> str:
    if isinstance(value, float):
        return format(value, ".4g")
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, bool | int):
        return str(value)
    return json.dumps(value, sort_keys=True, default=str)


def value_ends(values: Iterable[Any]) -> tuple[Any, ...]:
    """The values whose texts sort first and last: all `short_value` needs of the other runs'
    values for a key (a text's earliest difference from any of a sorted set is from one of its
    ends), so a table of n runs cuts each value against two texts, not n."""
    texts = {_value_text(v): v for v in values}
    return (texts[min(texts)], texts[max(texts)]) if texts else ()


def short_value(value: Any, among: Sequence[Any] = ()) -> str:
    """A parameter value as a label shows it: `0.001`, `adamw`, `[256, 256]`, long ones cut. With
    the values `among` the other runs hold for the key (or only their `value_ends`), a long value
    is cut around where it first differs from them (`…filtered_wth_attri…` against
    `…filtered_with_attri…`): a cut that keeps only the shared start would label every run
    alike."""
    text = _value_text(value)
    if len(text) <= VALUE_MAX:
        return text
    others = [t for t in (_value_text(v) for v in among) if t != text]
    at = min((len(os.path.commonprefix([text, t])) for t in others), default=0)
    if at < VALUE_MAX - 1:
        return fit(text, VALUE_MAX, keep_end=False)
    start = min(at - VALUE_MAX // 3, len(text) - (VALUE_MAX - 1))
    window = text[start + 1: start + VALUE_MAX - 1]
    return f"…{window}…" if start + VALUE_MAX - 1 < len(text) else f"…{text[start + 1:]}"


def distinguishing_keys(configs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Keys whose value is not the same in every config (a missing key counts as different),
    in first-seen order."""
    keys = list(dict.fromkeys(k for c in configs for k in c))
    return [k for k in keys if len({json.dumps(c[k], sort_keys=True, default=repr)
                                    if k in c else "\0missing" for c in configs}) > 1]


def separating_keys(configs: Sequence[Mapping[str, Any]], limit: int = LABEL_MAX_KEYS) -> list[str]:
    """The few keys (at most `limit`) that together tell the configs apart best, keys every config
    sets first, picked greedily: three algorithms that differ on many keys in pairs get keys that
    name each of them, not three labels sharing their first keys."""
    keys = distinguishing_keys(configs)
    keys.sort(key=lambda k: not all(k in c for c in configs))

    def groups(chosen: list[str]) -> int:
        return len({tuple(repr(c.get(k, _MISSING)) for k in chosen) for c in configs})

    chosen: list[str] = []
    rest = list(keys)
    while rest and len(chosen) < limit and groups(chosen) < len(configs):
        best = max(rest, key=lambda k: groups([*chosen, k]))  # the first of equals: order kept
        if groups([*chosen, best]) == groups(chosen):
            break
        chosen.append(best)
        rest.remove(best)
    return chosen


_MISSING = object()


def _leaf_name(key: str) -> str:
    """A dotted key as a label shows it: its last part, unless that part alone is ambiguous."""
    return key.rsplit(".", 1)[-1] if "." in key else key


def params_text(config: Mapping[str, Any], keys: Sequence[str],
                ends: Mapping[str, Sequence[Any]] | None = None) -> str:
    """`lr=0.001, layers=4` for the keys this config sets (an unset key is left out, never
    `key=(absent)`); a long value is cut where it differs from the runs' values (`ends`: each
    key's `value_ends`)."""
    leaves = Counter(_leaf_name(k) for k in keys)
    parts = [f"{_leaf_name(k) if leaves[_leaf_name(k)] == 1 else k}="
             f"{short_value(config[k], (ends or {}).get(k, ()))}"
             for k in keys if k in config]
    return ", ".join(parts)


def _own_folder(arm: Any, arms: Sequence[Any], cut: int) -> str | None:
    """The folder every seed of `arm` lies under and no run of another arm does, relative to the
    common folder of all (cut parts), else None."""
    places = [run_place(r) for r in arm.seeds]
    if any(p is None for p in places):
        return None
    common = places[0][: _common_prefix(places)]  # type: ignore[index]
    if len(common) <= cut:
        return None
    for other in arms:
        if other is arm:
            continue
        for r in other.seeds:
            p = run_place(r)
            if p is not None and p[: len(common)] == common:
                return None
    return "/".join(common[cut:])


def name_arms(arms: Sequence[Any], configs: Sequence[Mapping[str, Any]],
              group_by: Sequence[str] = ()) -> None:
    """Name every run of one comparison (`name_runs`), then every arm (`label`, ≤ NAME_MAX
    characters) and what its parameters differ by (`differs`), by the module's rule. `configs`
    are the arms' parameters (`arms.arm_config`), or their whole configs under `--group-by`."""
    name_runs([r for a in arms for r in a.seeds])
    keys = list(group_by) or (separating_keys(configs) if len(arms) > 1 else [])
    ends = {k: value_ends(c[k] for c in configs if k in c) for k in keys}
    for arm, cfg in zip(arms, configs, strict=True):
        arm.differs = params_text(cfg, keys, ends)
    located = [p for a in arms for r in a.seeds if (p := run_place(r)) is not None]
    cut = _common_prefix(located) if len(located) > 1 else 0
    labels: list[str] = []
    for arm in arms:
        if group_by:
            label = arm.differs or arm.members
        elif arm.n > 1 and len(arms) > 1 and (folder := _own_folder(arm, arms, cut)):
            label = fit(folder)
        elif arm.n == 1:
            label = arm.primary.name
        else:
            label = fit(arm.differs, keep_end=False) if arm.differs else arm.members
        labels.append(label)
    counts = Counter(labels)
    labels = [a.members if counts[label] > 1 else label for a, label in zip(arms, labels, strict=True)]
    counts = Counter(labels)
    for i, (arm, label) in enumerate(zip(arms, labels, strict=True)):
        arm.label = f"{fit(label, NAME_MAX - 4)} #{i + 1}" if counts[label] > 1 else fit(label)


__all__ = ["LABEL_MAX_KEYS", "NAME_MAX", "distinguishing_keys", "fit", "found_in", "name_arms",
           "members_label", "name_runs", "named_by_path", "natural_key", "params_text", "place",
           "run_names", "run_place", "separating_keys", "short_value", "value_ends"]
