"""An arm is one side of a comparison: a run plus the sibling seeds that are its variance samples."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model import Run
from ..plugins import Plugins
from ..resolve import open_source


@dataclass
class Arm:
    """The run the user named (`primary`) and every seed of the same arm (primary included)."""

    address: str
    primary: Run
    seeds: list[Run] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.primary.name

    @property
    def n(self) -> int:
        return len(self.seeds)


def load_arm(raw: str, plugins: Plugins | None = None, *, siblings: bool = True) -> Arm:
    """Resolve an address into an arm: one run and its seed siblings, or a folder of seeds."""
    source = open_source(raw, plugins)
    refs = source.list_runs()
    if not refs:
        from ..errors import InputError

        raise InputError(f"{raw} names no runs", hint="check the path or run `rundiff ls` on it")
    if len(refs) == 1 and siblings and hasattr(source, "seed_siblings"):
        sib_refs = source.seed_siblings(refs[0])
        seeds = [source.load_run(r) if r.address != refs[0].address else None for r in sib_refs]
        primary = source.load_run(refs[0])
        seeds = [primary if s is None else s for s in seeds]
        if all(s is not primary for s in seeds):
            seeds.insert(0, primary)
    else:
        seeds = [source.load_run(r) for r in refs]
        primary = seeds[0]
    return Arm(address=raw, primary=primary, seeds=seeds)


def _arm_from_ref(source, ref, siblings: bool) -> Arm:
    """One named run plus (when `siblings`) the other seeds of its arm."""
    primary = source.load_run(ref)
    seeds = [primary]
    if siblings and hasattr(source, "seed_siblings"):
        seeds = [primary if r.address == ref.address else source.load_run(r)
                 for r in source.seed_siblings(ref)]
        if primary not in seeds:
            seeds.insert(0, primary)
    return Arm(address=ref.address, primary=primary, seeds=seeds)


def _open_named(raw: str, plugins: Plugins | None):
    """(source, refs) for an address, or for a bare run name found by project-level detection."""
    import os

    from ..address import parse_address
    from ..errors import RundiffError, UsageError

    try:
        source = open_source(raw, plugins)
        return source, source.list_runs()
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


def load_arms(raw: str, plugins: Plugins | None = None, *, siblings: bool = True) -> list[Arm]:
    """Every arm an address names, for commands that compare many arms.

    One run → that run with its seed siblings (like `load_arm`). A collection (a project, an
    experiment, a folder of runs) → its runs grouped into arms by seed siblings, in listing order;
    a source that knows no siblings gives one arm per run. A bare name that is not a path is looked
    up among the runs of the project found by project-level detection.
    """
    source, refs = _open_named(raw, plugins)
    if not refs:
        from ..errors import InputError

        raise InputError(f"{raw} names no runs", hint="check the path or run `rundiff ls` on it")
    if len(refs) == 1:
        arm = _arm_from_ref(source, refs[0], siblings)
        return [Arm(address=raw, primary=arm.primary, seeds=arm.seeds)]
    if not siblings or not hasattr(source, "seed_siblings"):
        return [Arm(address=r.address, primary=(run := source.load_run(r)), seeds=[run]) for r in refs]
    groups: dict[tuple[str, ...], list] = {}
    for ref in refs:
        members = tuple(sorted(r.address for r in source.seed_siblings(ref)))
        groups.setdefault(members if ref.address in members else (ref.address,), []).append(ref)
    arms = []
    for members in groups.values():
        runs = [source.load_run(r) for r in members]
        address = raw if len(groups) == 1 else members[0].address
        arms.append(Arm(address=address, primary=runs[0], seeds=runs))
    return arms
