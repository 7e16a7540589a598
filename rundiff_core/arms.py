"""An arm is one side of a comparison: a run plus the sibling seeds that are its variance samples."""

from __future__ import annotations

from dataclasses import dataclass, field

from .model import Run
from .plugins import Plugins
from .resolve import open_source


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
        from .errors import InputError

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
