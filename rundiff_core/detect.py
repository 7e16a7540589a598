"""Which adapter owns a bare path, and which tracker a project logs to.

Detection order is data, not call order: every claim is collected and ranked by its priority —
the claim's own when it sets one, else the claiming adapter's declared `priority` (lower first) —
then adapter name. A tie at the best priority between different adapters is an ambiguous-source
error. See docs/addresses.md for the table.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .errors import AmbiguousSourceError, InputError, UnrecognizedSourceError
from .plain import FrozenRecord
from .plugins import Plugins, get_plugins
from .registry import AdapterSpec, claim_priority

if TYPE_CHECKING:
    from .claims import Claim, ProjectClaim


class RankedClaim(FrozenRecord):
    """A claim with the adapter that made it, as the frozen dataclass it was (`FrozenRecord`):
    `detect` builds one per claim, and creating the dataclass cost more start-up than all of its
    uses."""

    __match_args__ = ("claim", "spec")

    def __init__(self, claim: Claim, spec: AdapterSpec) -> None:
        self._set_fields(claim, spec)

    @property
    def priority(self) -> int:
        return claim_priority(self.claim, self.spec)

    @property
    def rank(self) -> tuple[int, str]:
        return (self.priority, self.spec.name)


def collect_claims(path: str, plugins: Plugins | None = None) -> list[RankedClaim]:
    """Every adapter's claim on `path`, best first."""
    plugins = plugins or get_plugins()
    ranked: list[RankedClaim] = []
    for plugin_name, result in plugins.call_each("rundiff_sniff_path", path=path):
        for claim in result if isinstance(result, list | tuple) else [result]:
            spec = plugins.registry.by_name(claim.adapter)
            if spec is None:
                plugins.errors.append(
                    f"plugin '{plugin_name}' claimed {path} for unknown adapter '{claim.adapter}'"
                )
                continue
            ranked.append(RankedClaim(claim, spec))
    return sorted(ranked, key=lambda r: r.rank)


def sniff_path(path: str, plugins: Plugins | None = None) -> RankedClaim:
    """The winning claim on an existing bare path, or a clear error."""
    return winning_claim(path, None, plugins)


def winning_claim(path: str, claims: list[RankedClaim] | None,
                  plugins: Plugins | None = None) -> RankedClaim:
    """`sniff_path` over `claims` already collected for `path` (`rundiff detect` lists them and
    names the winner without asking every adapter twice); None collects them here."""
    plugins = plugins or get_plugins()
    file, sep, name = path.partition("#")
    if not os.path.exists(path) and sep and name and os.path.isfile(file):
        # `FILE#NAME`: one run of a file that holds several (a study's trial, a launch, a section)
        best = winning_claim(file, None, plugins)
        from dataclasses import replace

        return RankedClaim(replace(best.claim, locator=(best.claim.locator or file) + sep + name),
                           best.spec)
    folder = os.path.dirname(path) or "."
    if not os.path.exists(path) and path.endswith("*") and os.path.isdir(folder):
        # `DIR/PREFIX*`: the run a folder's files named by one prefix make (quoted in a shell)
        best = winning_claim(folder, None, plugins)
        from dataclasses import replace

        return RankedClaim(replace(best.claim, locator=os.path.join(
            best.claim.locator or folder, os.path.basename(path))), best.spec)
    if not os.path.exists(path):
        raise InputError(
            f"no such file or directory: {path}",
            hint="check the path, or give an address such as journal:PATH or wandb:ENTITY/PROJECT/ID",
        )
    if claims is None:
        claims = collect_claims(path, plugins)
    if not claims:
        deeper = ("`rundiff ls PATH` searches a folder as deep as its runs are and lists every "
                  "store it finds; or " if os.path.isdir(path) else "")
        raise UnrecognizedSourceError(
            f"no adapter recognises {path}",
            hint=deeper + "give a scheme explicitly; known schemes: "
            + ", ".join(f"{s}:" for s in plugins.registry.schemes),
        )
    best = claims[0]
    tied: list[RankedClaim] = []
    for c in claims:
        if c.priority == best.priority and c.spec.name != best.spec.name and all(
            t.spec.name != c.spec.name for t in tied
        ):
            tied.append(c)
    if tied:
        listing = "; ".join(f"{c.spec.name} ({c.claim.reason})" for c in [best, *tied])
        raise AmbiguousSourceError(
            f"ambiguous source {path}: claimed by {listing}",
            hint="prefix the path with a scheme, e.g. "
            + " or ".join(f"{c.spec.schemes[0]}:{path}" for c in [best, *tied]),
        )
    return best


def detect_project(
    cwd: str | None = None, environ: dict[str, str] | None = None, plugins: Plugins | None = None
) -> list[tuple[ProjectClaim, AdapterSpec]]:
    """Project-level claims (no address given), best first, ranked like path claims."""
    plugins = plugins or get_plugins()
    cwd = cwd or os.getcwd()
    environ = dict(os.environ if environ is None else environ)
    out: list[tuple[ProjectClaim, AdapterSpec]] = []
    for _plugin, result in plugins.call_each("rundiff_detect_project", cwd=cwd, environ=environ):
        for claim in result if isinstance(result, list | tuple) else [result]:
            spec = plugins.registry.by_name(claim.adapter)
            if spec is not None:
                out.append((claim, spec))

    def rank(cs: tuple[ProjectClaim, AdapterSpec]) -> tuple[int, str]:
        return (claim_priority(*cs), cs[1].name)

    return sorted(out, key=rank)
