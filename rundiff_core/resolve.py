"""Turn what the user typed into open RunSources and loaded Runs."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from .address import Address, parse_address
from .detect import detect_project, sniff_path
from .errors import AddressError, InputError, UnrecognizedSourceError, UsageError
from .opening import open_with
from .plugins import Plugins, get_plugins
from .registry import AdapterSpec
from .source import RunSource

if TYPE_CHECKING:
    from .model import Run

def open_source(raw: str, plugins: Plugins | None = None) -> RunSource:
    """Open the source an address names: registered scheme first, then hooks, then sniffing.

    The source comes back behind `RedactedSource`: every Run it lets out is redacted here, once,
    whichever adapter read it.
    Inside `reuse_loads()`, the same canonical address gives the same source (and its runs)."""
    plugins = plugins or get_plugins()
    address = parse_address(raw)
    spec: AdapterSpec | None = None
    if address.scheme is not None:
        spec = plugins.registry.by_scheme(address.scheme)
        if spec is None:
            claimed = plugins.call_first("rundiff_parse_address", raw=raw)
            if claimed is not None:
                address = claimed
                spec = plugins.registry.by_scheme(address.scheme)
            elif os.path.exists(raw):
                address = Address(raw, None, raw)
            else:
                raise AddressError(
                    f"unknown scheme '{address.scheme}:' in '{raw}'",
                    hint="known schemes: "
                    + ", ".join(f"{s}:" for s in plugins.registry.schemes)
                    + " (or a path to sniff)",
                )
    if spec is None:
        try:
            winner = sniff_path(address.locator, plugins)
        except UnrecognizedSourceError:
            store = _one_store_below(address.locator, plugins)
            if store is None:
                raise
            return open_source(store, plugins)
        spec = winner.spec
        locator = winner.claim.locator or address.locator
        address = Address(f"{spec.schemes[0]}:{locator}", spec.schemes[0], locator)
    return open_with(spec, address)


def _one_store_below(path: str, plugins: Plugins | None) -> str | None:
    """The address of the one store a folder holds deeper than a sniff looks (rundiff_core.tree),
    None when it holds none; several stores are a usage error naming them (`expand_stores`
    takes them all where a command reads many runs)."""
    if not os.path.isdir(path):
        return None
    from .tree import search_tree

    found = search_tree(path, plugins)
    stores = [s for s in found.stores if s.refs]
    if len(stores) == 1:
        return stores[0].address
    if len(stores) > 1:
        raise UsageError(f"{path} holds {len(stores)} stores deeper down: "
                         + "; ".join(found.summary_lines()[:4]),
                         hint="name one: " + ", ".join(s.address for s in stores[:4])
                         + ("" if len(stores) <= 4 else ", …"))
    return None


def expand_stores(raw: str, plugins: Plugins | None = None) -> list[str]:
    """`raw`, or — for a bare folder no adapter claims — the address of every store below it."""
    if parse_address(raw).scheme is not None or not os.path.isdir(raw):
        return [raw]
    try:
        sniff_path(raw, plugins)
        return [raw]
    except UnrecognizedSourceError:
        from .tree import search_tree

        stores = [s.address for s in search_tree(raw, plugins).stores if s.refs]
        return stores or [raw]


def load_runs(raw: str, plugins: Plugins | None = None) -> list[Run]:
    """Every run an address names, metadata loaded, histories lazy."""
    source = open_source(raw, plugins)
    refs = source.list_runs()
    if not refs:
        raise InputError(f"{raw} names no runs", hint="run `rundiff ls` on the parent to see what is there")
    return [source.load_run(ref) for ref in refs]


def load_run(raw: str, plugins: Plugins | None = None) -> Run:
    """Exactly one run; a collection address is a usage error listing what it holds."""
    runs = load_runs(raw, plugins)
    if len(runs) > 1:
        names = ", ".join(r.address for r in runs[:5])
        raise UsageError(
            f"{raw} names {len(runs)} runs ({names}{', …' if len(runs) > 5 else ''})",
            hint="address one run",
        )
    return runs[0]


def default_addresses(plugins: Plugins | None = None) -> list[str]:
    """Addresses from project-level detection when the user gave none."""
    claims = detect_project(plugins=plugins)
    for claim, _spec in claims:
        if claim.address:
            return [claim.address]
    raise UsageError(
        "no address given and no tracker found in this project",
        hint="tell rundiff where the metrics live, e.g. `rundiff ls runs/` or "
        "`rundiff ls wandb:ENTITY/PROJECT`; `rundiff detect` shows what was checked",
    )


def load_many(addresses: Iterable[str], plugins: Plugins | None = None) -> list[Run]:
    runs: list[Run] = []
    for raw in addresses:
        runs.extend(load_runs(raw, plugins))
    return runs
