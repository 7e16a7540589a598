"""The arm concept, once for every command and backend: an arm is the runs that differ only by seed.

How runs become arms (docs/diff.md, "Arms"; the same text is in docs/many.md):

1. **declared siblings** — the runs `RunSource.seed_siblings(ref)` returns (seed folders next to
   each other, a fleet dataset's `seed_group`);
2. else **equal configs in one collection** — runs the source lists in the same collection
   (`RunSource.collection(ref)`: the parent folder, experiment or project) whose configs are equal
   once seed keys, run-identity keys and keys or values naming the run itself are removed
   (`arm_config`; the local adapter's seed siblings use the same rule);
3. else the run alone.

`--group-by KEY[,KEY…]` replaces 1 and 2 (runs with equal values of those keys form an arm) and
`--no-seeds` makes every run its own arm. One labeller names arms: by the config that tells them
apart, else by their members (`version_11…13 (3 seeds)`).

This module imports no pandas: adapters use its seed rules (`seed_from_config`,
`seed_from_name`, `seed_folder_siblings`) through `rundiff_core`'s exports.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .naming import distinguishing_keys, members_label, name_arms, name_runs, natural_key
from .parameters import (
    ARMS_TABLE_KEYS,
    IDENTITY_KEYS,
    SEED_KEY_RULE,
    ArmRules,
    is_identity_key,
    is_seed_key,
    load_arm_rules,
    parameters,
    seed_key_order,
)

if TYPE_CHECKING:
    from ..model import Run, RunRef
    from ..plugins import Plugins
    from ..source import RunSource

# -- seed keys and seed folder names --------------------------------------------------------------
_SEED_NAME = re.compile(r"^(?P<stem>.*?)(?:[-_.]?seed[-_]?|[-_]s)(?P<seed>\d+)$", re.I)
"""`seed-3`, `seed_3`, `seed3`, `exp-a-seed-3`, `lr0.1_s3`, `ppo-s3` → seed 3 (stem: what precedes
it)."""

def _int_value(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return None


def seed_from_config(config: Mapping[str, Any]) -> int | None:
    """The run's seed from its (nested or dotted) config: an integer under a seed key, a key
    named exactly `seed` first, then the shallowest, then by name."""
    flat = _flatten(config)
    keys = sorted((k for k in flat if is_seed_key(k)),
                  key=seed_key_order)
    for key in keys:
        value = _int_value(flat[key])
        if value is not None:
            return value
    return None


def _flatten(mapping: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in mapping.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping) and v:
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def seed_from_name(name: str) -> int | None:
    """The seed a run folder's name carries (`seed-N`, `seed_N`, `seedN`, `…_sN`, `…-sN`), else None."""
    m = _SEED_NAME.match(os.path.basename(os.path.normpath(name)))
    return int(m.group("seed")) if m else None


def seed_of(config: Mapping[str, Any], path: str | None = None) -> int | None:
    """The seed rule adapters share: the config's seed key, else the run folder's name."""
    seed = seed_from_config(config) if isinstance(config, Mapping) else None
    return seed if seed is not None or not path else seed_from_name(path)


def seed_stem(name: str) -> str | None:
    """A seed-named folder's name without its seed part (`exp_s3` → `exp`), else None."""
    m = _SEED_NAME.match(os.path.basename(os.path.normpath(name)))
    return m.group("stem") if m else None


def seed_folder_siblings(path: str, is_run: Callable[[str], bool]) -> list[str]:
    """The run folders next to a seed-named run folder whose names differ only in the seed
    (`seed-0`/`seed-1`, `lr0.1_s0`/`lr0.1_s1`), sorted; `[path]` when it is not seed-named."""
    parent, base = os.path.split(os.path.normpath(path))
    stem = seed_stem(base)
    if stem is None:
        return [path]
    found = _seed_folders(parent or ".", is_run).get(stem, [])
    return found if os.path.join(parent, base) in found else [path]


_FOLDERS: dict[tuple[str, int, str], dict[str, list[str]]] = {}


def _seed_folders(parent: str, is_run: Callable[[str], bool]) -> dict[str, list[str]]:
    """stem → seed-named run folders of `parent`, scanned once per (folder mtime, run test): an
    arm of N seeds costs one scan, not N."""
    try:
        stamp = os.stat(parent).st_mtime_ns
        key = (parent, stamp, f"{getattr(is_run, '__module__', '')}.{getattr(is_run, '__qualname__', '')}")
        hit = _FOLDERS.get(key)
        if hit is not None:
            return hit
        names = sorted(e.name for e in os.scandir(parent) if e.is_dir())
    except OSError:
        return {}
    out: dict[str, list[str]] = {}
    for name in names:
        stem = seed_stem(name)
        if stem is not None and is_run(os.path.join(parent, name)):
            out.setdefault(stem, []).append(os.path.join(parent, name))
    if len(_FOLDERS) > 64:
        _FOLDERS.clear()
    _FOLDERS[key] = out
    return out


def arm_config(run: Run, rules: ArmRules | None = None) -> dict[str, Any]:
    """The run's parameters (`parameters`) without seed keys, path-like strings normalised: what
    must be equal for two runs to be seeds of one arm (in every adapter: the local one compares
    seed folders by it)."""
    return {k: _same_path(v) for k, v in parameters(run, rules)[0].items()
            if not is_seed_key(k, rules)}


_PATHLIKE = re.compile(r"^\.{0,2}/|/|^\.{1,2}$")


def _same_path(value: Any) -> Any:
    """`./input` and `input/` are the same path as `input`: compare relative paths normalised."""
    if isinstance(value, str) and value and _PATHLIKE.search(value) and not any(
            c.isspace() for c in value) and "://" not in value:
        return posixpath.normpath(value)
    return value


def arm_key(run: Run, rules: ArmRules | None = None) -> str | None:
    """A canonical text of `arm_config`; None for a run that logged no config (it stays alone)."""
    if not run.config:
        return None
    return arm_config_text(run, rules)


def arm_config_text(run: Run, rules: ArmRules | None = None) -> str:
    """A canonical text of `arm_config`, also for a run without config (`{}`): equal texts are
    equal arm configs."""
    return json.dumps(arm_config(run, rules), sort_keys=True, default=str)


# -- grouping -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Grouping:
    """How runs become arms: the default rules, `--group-by KEYS`, or `--no-seeds`."""

    seeds: bool = True
    group_by: tuple[str, ...] = ()
    rules: ArmRules = field(default_factory=ArmRules)

    @classmethod
    def from_options(cls, *, no_seeds: bool = False, group_by: str | Sequence[str] | None = None,
                     project_file: str | None = None) -> Grouping:
        """From the command-line flags; reads the `[arms]` table of rundiff.toml."""
        keys: list[str] = []
        for item in [group_by] if isinstance(group_by, str) else (group_by or []):
            keys += [k.strip() for k in item.split(",") if k.strip()]
        if no_seeds and keys:
            from ..errors import UsageError

            raise UsageError("--group-by and --no-seeds contradict each other",
                             hint="--no-seeds makes every run its own arm; drop one of them")
        return cls(seeds=not no_seeds, group_by=tuple(keys), rules=load_arm_rules(project_file))


DEFAULT = Grouping()


def _group_value(run: Run, key: str) -> str:
    flat = run.flat_config
    return json.dumps(flat.get(key), sort_keys=True, default=str)


def group_runs(runs: Sequence[Run], grouping: Grouping | None = None) -> list[tuple[list[Run], str]]:
    """Partition runs into arms, in first-seen order: [(members, how the arm was formed)].

    Uses what `attach` recorded on each run (its collection and declared siblings); runs never
    attached (built in memory) share one collection.
    """
    g = grouping or DEFAULT
    if not g.seeds:
        return [([r], "--no-seeds") for r in runs]
    if g.group_by:
        _check_group_keys(runs, g.group_by)
        buckets: dict[tuple[str, ...], list[Run]] = {}
        for r in runs:
            buckets.setdefault(tuple(_group_value(r, k) for k in g.group_by), []).append(r)
        how = "--group-by " + ",".join(g.group_by)
        return [(members, how) for members in buckets.values()]
    present = {r.address for r in runs}
    parent = {a: a for a in present}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(x: str, y: str) -> None:
        a, b = find(x), find(y)
        if a != b:
            parent[max(a, b)] = min(a, b)

    linked: dict[tuple[str, ...], str] = {}  # seeds of one arm declare one list: link it once
    for r in runs:
        sibs = tuple(o for o in r.declared_siblings if o in present)
        if not sibs:
            continue
        if sibs in linked:
            union(r.address, linked[sibs])
            continue
        linked[sibs] = sibs[0]
        for other in sibs:
            union(r.address, other)
    declared: dict[str, list[Run]] = {}
    for r in runs:
        declared.setdefault(find(r.address), []).append(r)
    keyed: dict[Any, list[Run]] = {}
    for r in runs:
        members = declared[find(r.address)]
        if len(members) > 1:
            keyed.setdefault(("declared", find(r.address)), members)
            continue
        key = arm_key(r, g.rules)
        keyed.setdefault(("alone", r.address) if key is None else ("config", r.collection, key),
                         []).append(r)
    out = []
    for kind, members in ((k[0], m) for k, m in keyed.items()):
        coll = members[0].collection
        how = {"declared": "seed siblings the source declares",
               "config": f"equal config in {_where(coll)}" if coll else "equal config"}.get(kind, "one run")
        out.append((members, how if len(members) > 1 else "one run"))
    return out


def _where(collection: str) -> str:
    """A collection as a person names it in a sentence: its folder's name, not its address."""
    from .naming import place

    where = place(collection)
    return where[-1] if where else collection


def _check_group_keys(runs: Sequence[Run], keys: Sequence[str]) -> None:
    known = set().union(*(r.flat_config for r in runs)) if runs else set()
    missing = [k for k in keys if k not in known]
    if missing:
        from ..errors import UsageError

        raise UsageError(f"--group-by {', '.join(missing)}: no run has that config key",
                         hint="config keys: " + ", ".join(sorted(known)[:20]))


# -- arms -----------------------------------------------------------------------------------------
@dataclass
class Arm:
    """The run the user named (`primary`) and every seed of the same arm (primary included).

    `label` names the arm among the arms it is compared with (`label_arms`); `members` names it
    by its runs; `how` says which rule formed it; `notes` say what the search could not do.
    """

    address: str
    primary: Run
    seeds: list[Run] = field(default_factory=list)
    label: str = ""
    #: the few parameters that tell this arm from the others it is compared with (`lr=0.001`)
    differs: str = ""
    how: str = "one run"
    notes: list[str] = field(default_factory=list)
    #: True when the user's address named this one run (not a collection): such a run is a side
    #: of `diff`/`compare` of its own and never a seed of another named run's arm (`named_sides`).
    named_run: bool = False

    def __post_init__(self) -> None:
        if not self.seeds:
            self.seeds = [self.primary]
        if not self.label:
            self.label = self.members

    @property
    def name(self) -> str:
        return self.primary.name

    @property
    def n(self) -> int:
        return len(self.seeds)

    @property
    def members(self) -> str:
        """`version_11…13 (3 seeds)`, or the run's name for a single run."""
        return members_label(self.seeds)

    @property
    def members_full(self) -> str:
        """Every member's name: `version_11, version_12, version_13`."""
        return members_label(self.seeds, short=False)


def label_arms(arms: Sequence[Arm], grouping: Grouping | None = None) -> None:
    """Name one comparison's runs and arms (`naming.name_arms`: docs/names.md), from the arms'
    parameters — the grouping rule's own `arm_config` — or, under `--group-by`, those keys."""
    g = grouping or DEFAULT
    configs = [a.primary.flat_config if g.group_by else arm_config(a.primary, g.rules) for a in arms]
    name_arms(arms, configs, g.group_by)


def arms_of(runs: Sequence[Run], grouping: Grouping | None = None, *, address: str | None = None
            ) -> list[Arm]:
    """The arms of already-loaded runs (many-run commands), labelled."""
    arms = [Arm(address=address or members[0].address, primary=members[0], seeds=list(members),
                how=how) for members, how in group_runs(runs, grouping)]
    label_arms(arms, grouping)
    return arms


# -- sources --------------------------------------------------------------------------------------
SCAN_LIMIT = 2000
"""A single run's collection is searched for equal configs only up to this many runs."""


def declared_siblings(source: RunSource, ref: RunRef) -> list[RunRef]:
    """`source.seed_siblings(ref)` (default `[ref]`); a failing lookup declares nothing."""
    fn = getattr(source, "seed_siblings", None)
    if fn is None:
        return [ref]
    try:
        return list(fn(ref)) or [ref]
    except Exception:  # noqa: BLE001 - sibling discovery is a nicety; never fail the run for it
        return [ref]


def collection_of(source: RunSource, ref: RunRef) -> str | None:
    """`source.collection(ref)` (default: the address the source was opened with)."""
    fn = getattr(source, "collection", None)
    if fn is None:
        return str(source.address)
    return fn(ref)


def attach(source: RunSource, ref: RunRef, run: Run) -> Run:
    """Record on a loaded run where its seeds can be: its collection (the run itself when the
    source names none) and the siblings the source declares."""
    try:
        coll = collection_of(source, ref)
    except Exception:  # noqa: BLE001 - a source that cannot say has no collection to search
        coll = None
    run.collection = coll if coll is not None else f"{run.address} (alone)"
    run.declared_siblings = tuple(r.address for r in declared_siblings(source, ref))
    return run


def load_attached(source: RunSource, ref: RunRef) -> Run:
    """`source.load_run(ref)` with `attach` applied."""
    return attach(source, ref, source.load_run(ref))


def _collection_peers(source: RunSource, ref: RunRef, run: Run, grouping: Grouping,
                      plugins: Plugins | None, notes: list[str]) -> list[Run]:
    """The other runs of `run`'s collection whose arm key equals its own (rule 2)."""
    from ..errors import RundiffError
    from ..resolve import open_source

    key = arm_key(run, grouping.rules)
    coll = run.collection
    if (key is None and not grouping.group_by) or not coll or coll.endswith(" (alone)"):
        return []
    try:
        other = source if coll == str(source.address) else open_source(coll, plugins)
        refs = other.list_runs()
    except RundiffError as exc:
        notes.append(f"seeds not searched in {coll}: {exc}")
        return []
    if len(refs) > SCAN_LIMIT:
        notes.append(f"seeds not searched: {coll} lists {len(refs)} runs (more than {SCAN_LIMIT}); "
                     "give the seeds' folder or use --group-by")
        return []
    peers = []
    for r in refs:
        try:
            if r.address == ref.address or collection_of(other, r) != coll:
                continue
            cand = load_attached(other, r)
        except RundiffError as exc:
            notes.append(f"{r.address} skipped while searching seeds: {exc}")
            continue
        # a run in a declared seed group belongs to that arm (rule 1), as in group_runs
        if cand.address == run.address or (not grouping.group_by and len(cand.declared_siblings) > 1):
            continue
        if grouping.group_by:
            same = all(_group_value(cand, k) == _group_value(run, k) for k in grouping.group_by)
        else:
            same = arm_key(cand, grouping.rules) == key
        if same:
            peers.append(cand)
    return peers


def arm_for_ref(source: RunSource, ref: RunRef, grouping: Grouping | None = None,
                plugins: Plugins | None = None, address: str | None = None) -> Arm:
    """One named run plus the other seeds of its arm (rules 1-3, or --group-by)."""
    grouping = grouping or DEFAULT
    address = address or ref.address
    primary = load_attached(source, ref)
    if not grouping.seeds:
        return Arm(address=address, primary=primary, how="--no-seeds")
    notes: list[str] = []
    if not grouping.group_by:
        sib_refs = [r for r in declared_siblings(source, ref) if r.address != ref.address]
        if sib_refs:
            seeds = [primary] + [load_attached(source, r) for r in sib_refs]
            seeds.sort(key=lambda r: natural_key(r.name))
            return Arm(address=address, primary=primary, seeds=seeds,
                       how="seed siblings the source declares")
    if grouping.group_by:
        _check_group_keys([primary], grouping.group_by)
    peers = _collection_peers(source, ref, primary, grouping, plugins, notes)
    how = ("--group-by " + ",".join(grouping.group_by) if grouping.group_by
           else f"equal config in {_where(primary.collection)}")
    seeds = sorted([primary, *peers], key=lambda r: natural_key(r.name))
    return Arm(address=address, primary=primary, seeds=seeds, how=how if peers else "one run",
               notes=notes)


def _open_named(raw: str, plugins: Plugins | None) -> tuple[RunSource, list[RunRef]]:
    """(source, refs) for an address, or for a bare run name found by project-level detection."""
    from ..address import parse_address
    from ..errors import InputError, RundiffError, UsageError
    from ..resolve import open_source

    try:
        source = open_source(raw, plugins)
        refs = source.list_runs()
    except RundiffError as original:
        if parse_address(raw).scheme is not None or os.path.exists(raw):
            raise
        from ..resolve import default_addresses

        try:
            project = default_addresses(plugins)[0]
            source = open_source(project, plugins)
            refs = source.list_runs()
        except RundiffError:
            raise original from None
        hits = [r for r in refs if raw in (r.name, r.run_id) or (r.name or "").endswith("/" + raw)]
        if not hits:
            raise original from None
        if len(hits) > 1:
            raise UsageError(
                f"'{raw}' matches {len(hits)} runs in {project}: "
                + ", ".join(h.address for h in hits[:5]),
                hint="give the full address of one of them",
            ) from None
        return source, hits
    if not refs:
        raise InputError(f"{raw} names no runs", hint="check the path or run `rundiff ls` on it")
    return source, refs


def _grouping(siblings: bool, grouping: Grouping | None) -> Grouping:
    if grouping is None:
        return DEFAULT if siblings else Grouping(seeds=False)
    return grouping if siblings else Grouping(seeds=False, rules=grouping.rules)


def _named(arm: Arm) -> Arm:
    arm.named_run = True
    return arm


def load_arm(raw: str, plugins: Plugins | None = None, *, siblings: bool = True,
             grouping: Grouping | None = None) -> Arm:
    """The arm an address names: one run and the other seeds of its arm (searched among the runs
    of its collection), or a collection whose runs form one arm (else its first arm, with a
    note naming the others)."""
    g = _grouping(siblings, grouping)
    source, refs = _open_named(raw, plugins)
    if len(refs) == 1:
        return _named(arm_for_ref(source, refs[0], g, plugins, raw))
    arms = arms_of([load_attached(source, r) for r in refs], g, address=raw)
    first = arms[0]
    if len(arms) > 1:
        first.notes.append(f"{raw} holds {len(arms)} arms; using {first.members} "
                           f"(others: {', '.join(a.members for a in arms[1:4])}"
                           + (", …" if len(arms) > 4 else "") + ")")
    first.label = first.members
    return first


def load_arms(raw: str, plugins: Plugins | None = None, *, siblings: bool = True,
              grouping: Grouping | None = None) -> list[Arm]:
    """Every arm an address names, for commands that compare many arms.

    One run → that run with the other seeds of its arm (like `load_arm`). A collection (a project,
    an experiment, a folder of runs) → its runs grouped into arms, in listing order. A bare name
    that is not a path is looked up among the runs of the project found by project-level
    detection. Labels are set by the caller once every address is loaded (`label_arms`).
    """
    g = _grouping(siblings, grouping)
    source, refs = _open_named(raw, plugins)
    if len(refs) == 1:
        return [_named(arm_for_ref(source, refs[0], g, plugins, raw))]
    arms = arms_of([load_attached(source, r) for r in refs], g)
    if len(arms) == 1:
        arms[0].address = raw
    return arms


def overlapping(a: Arm, b: Arm) -> bool:
    """True when two arms share a run (diff A B naming two seeds of one arm)."""
    return bool({r.address for r in a.seeds} & {r.address for r in b.seeds})


def split_to_runs(arms: Iterable[Arm]) -> list[Arm]:
    """Each arm reduced to its named run (when two named runs turn out to be seeds of one arm),
    with one note on the first saying why."""
    arms = list(arms)
    out = [Arm(address=arm.address, primary=arm.primary, how="one run", notes=list(arm.notes))
           for arm in arms]
    if len({a.primary.address for a in arms}) == 1 and len(arms) > 1:
        out[0].notes.append(f"{arms[0].primary.name} is named {len(arms)} times: compared with "
                            "itself, without its seeds")
    elif len(arms) > 1:
        names = ", ".join(a.primary.name for a in arms)
        out[0].notes.append(
            f"{names} are seeds of one arm ({arms[0].how}; docs/diff.md#arms): each named run is "
            "compared on its own")
    return out


def named_sides(arms: Sequence[Arm]) -> list[Arm]:
    """The user's addresses are the sides (diff, compare): a run the user named — on its own or
    inside a collection address — is never pulled into another named address's arm as a seed.

    An arm whose address named one run (`Arm.named_run`) and that counts as a seed a run another
    address names (or that names the same run as another) is reduced to its named run, one note
    saying so; a collection's arm gives up the runs named on their own.
    """
    from ..errors import UsageError

    arms = list(arms)
    name_runs([r for a in arms for r in a.seeds])  # the notes below name runs as every output does
    singles = [i for i, a in enumerate(arms) if a.named_run]
    named = {arms[i].primary.address for i in singles}
    twice = {a for a, n in Counter(arms[i].primary.address for i in singles).items() if n > 1}
    holders: dict[str, set[int]] = {}  # run address → the arms counting it
    for i, arm in enumerate(arms):
        for r in arm.seeds:
            holders.setdefault(r.address, set()).add(i)

    def clashes(i: int) -> bool:
        own = arms[i].primary.address
        if own in twice or holders[own] - {i}:  # named twice, or a seed of another named arm
            return True
        return any(r.address in named or holders[r.address] - {i}
                   for r in arms[i].seeds if r.address != own)

    clash = [i for i in singles if clashes(i)]
    split = dict(zip(clash, split_to_runs(arms[i] for i in clash), strict=True))
    for arm in split.values():
        arm.named_run = True
    out: list[Arm] = []
    for i, arm in enumerate(arms):
        if i in split:
            out.append(split[i])
        elif not arm.named_run and any(r.address in named for r in arm.seeds):
            kept = [r for r in arm.seeds if r.address not in named]
            if not kept and len(arms) <= 2:
                raise UsageError(f"{arm.address} holds no run besides the ones named on their own",
                                 hint="name another run or collection")
            if kept:  # the collection's arm without the runs the user named on their own
                out.append(Arm(address=arm.address, primary=kept[0], seeds=kept, label=arm.label,
                               how=arm.how if len(kept) > 1 else "one run", notes=arm.notes))
        else:
            out.append(arm)
    return out


def seeds_apart(arm: Arm, named: Iterable[str]) -> list[Run]:
    """The arm's seeds without the runs (addresses) the user named one by one elsewhere in the
    same command (`ablate`'s and `watch`'s runs beside `--baseline`), its own run kept: a named
    run is never a seed of the baseline."""
    others = set(named) - {arm.primary.address}
    return [r for r in arm.seeds if r.address not in others]


def runs_apart(arms: Sequence[Arm], what: str = "compared") -> list[Arm]:
    """When every run given is a seed of one arm, a comparison of one group says nothing: the
    runs are taken one by one, with one note. Otherwise the arms as they are."""
    if len(arms) != 1 or arms[0].n < 2:
        return list(arms)
    arm = arms[0]
    out = [Arm(address=r.address, primary=r, how="one run") for r in arm.seeds]
    how = arm.how.split(" in ", 1)[0]  # the rule, not the (long) collection address
    out[0].notes.append(f"every run given is a seed of one arm ({arm.n} runs, {how}): "
                        f"{what} run by run")
    return out


__all__ = [
    "ARMS_TABLE_KEYS", "Arm", "ArmRules", "Grouping", "IDENTITY_KEYS",
    "SEED_KEY_RULE", "arm_config",
    "arm_config_text", "arm_for_ref",
    "arm_key", "arms_of", "attach", "collection_of", "declared_siblings", "distinguishing_keys",
    "group_runs", "is_identity_key", "is_seed_key", "label_arms", "load_arm", "load_arm_rules",
    "load_arms", "load_attached", "members_label", "named_sides", "overlapping",
    "parameters", "runs_apart",
    "seeds_apart",
    "seed_folder_siblings",
    "seed_from_config", "seed_from_name", "seed_of", "seed_stem", "split_to_runs",
]
