"""Opening the source of an address whose adapter is known: behind `RedactedSource`, and reused
inside `reuse_loads()`.

Below both `resolve` (which finds the adapter: scheme, hooks, sniffing, a store deeper down) and
`tree` (which finds the stores below a folder and opens each), so neither imports the other.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .address import Address
    from .model import Run
    from .plugins import Plugins
    from .registry import AdapterSpec
    from .source import RunSource

# Every command runs inside `reuse_loads()`, and `detect` or a `--help` open no source: the
# redaction and address modules are imported when a source is opened.

# Active reuse scopes (innermost last): canonical address → source, (adapter, run address) → Run.
_SCOPES: list[tuple[dict[str, Any], dict[tuple[str, str], Run]]] = []


@contextmanager
def reuse_loads() -> Iterator[None]:
    """Within this scope an address opened twice is one source and a run loaded twice is one `Run`
    (whose histories are cached per key set), so `rundiff diff X X`, a baseline that is also a
    seed sibling, or a second `--metric` pass reads each file once. Commands run in one scope;
    `watch` starts a new one per poll, so new points are never hidden."""
    _SCOPES.append(({}, {}))
    try:
        yield
    finally:
        _SCOPES.pop()


def _reused(source: RunSource, adapter: str) -> RunSource:
    """`source` whose load_run answers from the innermost scope's runs."""
    runs = _SCOPES[-1][1]
    load = source.load_run

    def load_run(ref: Any) -> Run:
        key = (adapter, ref.address)
        hit = runs.get(key)
        if hit is None:
            hit = runs[key] = load(ref)
        return hit

    source.load_run = load_run  # type: ignore[method-assign]
    return source


def open_with(spec: AdapterSpec, address: Address) -> RunSource:
    """`spec`'s source for `address`, redacted; inside `reuse_loads()`, the same address gives the
    same source (and its runs)."""
    from .redact import redacted_errors, redacted_source

    source_cls = spec.load_source_class()
    if _SCOPES:
        sources = _SCOPES[-1][0]
        hit = sources.get(address.raw)
        if hit is None:
            with redacted_errors():
                hit = sources[address.raw] = redacted_source(
                    _reused(source_cls(address), spec.name))
        return hit
    with redacted_errors():
        return redacted_source(source_cls(address))


def open_registered(raw: str, plugins: Plugins) -> RunSource:
    """The source of `raw`, whose scheme a registered adapter owns (`scheme:locator` as found by a
    sniff): what `resolve.open_source` does for such an address."""
    from .address import parse_address

    address = parse_address(raw)
    spec = plugins.registry.by_scheme(address.scheme) if address.scheme else None
    if spec is None:
        raise ValueError(f"no registered adapter owns the scheme of {raw!r}")
    return open_with(spec, address)
