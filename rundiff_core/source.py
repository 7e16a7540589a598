"""The RunSource protocol: the one object an adapter must provide.

An adapter's `AdapterSpec.source` names a class (by dotted path, imported on first use) that is
constructed as `SourceClass(address)` and then answers four questions. That is the whole contract
a third party implements; `seed_siblings` and `collection` have defaults (what rundiff's arm
rule needs to find a run's seeds, docs/diff.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import pandas as pd

    from .address import Address
    from .model import Run, RunRef


@runtime_checkable
class RunSource(Protocol):
    """What an address resolves to: one run, or a collection (a folder of seeds, a project)."""

    address: Address

    def list_runs(self) -> list[RunRef]:
        """Every run the address names, in a stable order. Never loads histories."""
        ...

    def load_run(self, ref: RunRef) -> Run:
        """Metadata for one run; its `history()` must call back into `load_history` lazily."""
        ...

    def load_history(self, ref: RunRef, keys: Sequence[str] | None = None) -> pd.DataFrame:
        """Every logged point of `keys` (all when None) as a long frame. Never sampled."""
        ...

    def close(self) -> None:
        """Release clients and open files."""
        ...

    def seed_siblings(self, ref: RunRef) -> list[RunRef]:
        """Runs the source knows to be the same arm with another seed, `ref` included (seed
        folders side by side, a stored seed group). Default: `[ref]`, none declared; rundiff then
        searches `collection(ref)` for runs with an equal config (docs/diff.md, Arms)."""
        return [ref]

    def collection(self, ref: RunRef) -> str | None:
        """The address of the collection `ref` was logged into (its parent folder, experiment or
        project), searched for runs with an equal config when `seed_siblings` declares none.
        Cheap: no loading. None: the run has no collection to search (it stays alone unless
        declared siblings say otherwise). Default: the address this source was opened with."""
        return str(self.address)


class BaseSource:
    """Optional convenience base: stores the address and wires `Run.loader` to `load_history`."""

    #: True when load_run/load_history may run concurrently on several threads (engines then
    #: load many runs on a small pool). Only claim it for sources with no shared client state.
    thread_safe: bool = False

    def __init__(self, address: Address) -> None:
        self.address = address

    def close(self) -> None:  # noqa: B027 - deliberately a no-op default
        pass

    def bind(self, run: Run, ref: RunRef) -> Run:
        """Attach the lazy history loader to a freshly built Run."""
        run.loader = lambda keys: self.load_history(ref, keys)
        return run

    def seed_siblings(self, ref: RunRef) -> list[RunRef]:
        """Runs that are the same arm with another seed (default: none declared)."""
        return [ref]

    def collection(self, ref: RunRef) -> str | None:
        """The address of the collection holding `ref` (default: the address opened)."""
        return str(self.address)

    def __enter__(self) -> BaseSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
