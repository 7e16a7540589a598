"""Which addresses the MCP server may read: paths under its roots, remote trackers only if allowed.

An agent can type any string, so every address is checked before anything is opened, and every
run that loading produced (seed siblings included) is checked again before an answer is built:

- a path, or a path scheme (`journal:`, `tb:`, `traj:`, `local:`, `parquet:`, third-party
  schemes) — the path before any `#selector`, with `~`, `..` and symlinks resolved, must lie inside
  one of the roots;
- `wandb:`, `neptune:` and `mlflow:` name a path when the locator (the store, for mlflow) exists on
  disk or looks like one (`.`, `/`, `~`, `sqlite:///`, `file://`) — checked as above — and a
  tracking server otherwise (`wandb:ENT/PROJ`, `mlflow:http://…#exp`), as does any other scheme
  that is not a path on disk (`https://wandb.ai/…`): refused unless the server was started with
  `--allow-remote`;
- a bare address that is not a path on disk is refused (the CLI would look it up as a run name in
  the project it detects, which may be a tracking server);
- an `mlflow:` address without a store would read the default store (MLFLOW_TRACKING_URI or
  ./mlruns), which is neither a root nor named: refused unless `--allow-remote`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rundiff_core.address import parse_address
from rundiff_core.errors import RunNotFoundError, UsageError

REMOTE_CAPABLE = ("wandb", "neptune", "mlflow")


class OutsideRootsError(UsageError):
    """An address names a path outside the server's roots, or a server it may not contact."""


def _real(path: str) -> str:
    return os.path.realpath(os.path.expanduser(path))


def _looks_like_path(locator: str) -> bool:
    return locator.startswith((".", "/", "~")) or locator.endswith(".wandb") or os.path.exists(locator)


@dataclass(frozen=True)
class Confinement:
    """The roots (resolved once at start) and whether tracking servers may be contacted."""

    roots: tuple[str, ...]
    allow_remote: bool = False
    command: str = "rundiff mcp"  # the server the hints tell to restart

    @classmethod
    def of(cls, roots: Sequence[str] | None = None, *, allow_remote: bool = False,
           command: str = "rundiff mcp") -> Confinement:
        chosen = list(roots or [os.getcwd()])
        for r in chosen:
            if not os.path.isdir(r):
                raise UsageError(f"--root {r} is not a folder", hint="give an existing folder")
        return cls(tuple(dict.fromkeys(_real(r) for r in chosen)), allow_remote, command)

    def _inside(self, path: str) -> bool:
        real = _real(path)
        return any(real == root or real.startswith(root.rstrip(os.sep) + os.sep)
                   for root in self.roots)

    def check_path(self, path: str, shown: str | None = None) -> None:
        """Refuse a path that resolves outside every root."""
        if not self._inside(path):
            raise OutsideRootsError(
                f"{shown or path} is outside the folders this server may read",
                hint="roots: " + ", ".join(self.roots) + f" — restart `{self.command}` with "
                "--root DIR to add one")

    def _remote(self, raw: str, what: str) -> None:
        if not self.allow_remote:
            raise OutsideRootsError(
                f"{raw} names {what}, and this server reads local files only",
                hint=f"restart `{self.command}` with --allow-remote to let it contact tracking "
                "servers, or give a path under " + ", ".join(self.roots))

    def check_address(self, raw: str) -> None:
        """Refuse an address outside the roots (see the module docstring for the rules)."""
        address = parse_address(raw)
        scheme, locator = address.scheme, address.locator
        if scheme in REMOTE_CAPABLE:
            return self._check_tracker(raw, scheme, locator)
        if scheme is None:
            return self._check_bare(raw)
        if "://" in raw.split("#", 1)[0]:  # https://wandb.ai/…, tb:s3://bucket/…
            return self._remote(raw, "a web address")
        if _registered(scheme):
            return self._check_path_locator(raw, locator)
        if os.path.exists(raw):  # `x:y` that is no scheme but a file name
            return self._check_path_locator(raw, raw)
        return self._remote(raw, f"an unknown scheme '{scheme}:'")

    def _check_path_locator(self, raw: str, path: str) -> None:
        """The path before a `#selector` (and the whole locator, when it is itself a path)."""
        self.check_path(path.split("#", 1)[0] or ".", raw)
        if "#" in path and os.path.exists(path):
            self.check_path(path, raw)

    def _check_bare(self, raw: str) -> None:
        self._check_path_locator(raw, raw)
        if not os.path.exists(raw.split("#", 1)[0] or "."):
            # the CLI looks a bare name up in the project it detects — possibly a tracking
            # server the environment names; the server reads only what it is given
            raise RunNotFoundError(f"{raw} does not exist",
                                   hint="give a path under " + ", ".join(self.roots)
                                   + " or a scheme:locator address (run names are not looked "
                                   "up here)")

    def _check_tracker(self, raw: str, scheme: str, locator: str) -> None:
        if scheme == "mlflow":
            return self._check_mlflow(raw, locator)
        head = locator.split("#", 1)[0].split("?", 1)[0]
        if head and _looks_like_path(head):
            return self.check_path(head, raw)
        return self._remote(raw, f"a {scheme} server")

    def _check_mlflow(self, raw: str, locator: str) -> None:
        store, sep, _selector = locator.partition("#")
        if not sep:
            if _looks_like_path(store):
                return self.check_path(store, raw)
            return self._remote(raw, "mlflow's default store (MLFLOW_TRACKING_URI or ./mlruns)")
        for prefix in ("sqlite:///", "file://"):
            if store.startswith(prefix):
                return self.check_path(store[len(prefix):] or "/", raw)
        if "://" in store:
            return self._remote(raw, "an MLflow tracking server")
        return self.check_path(store or ".", raw)

    def check_addresses(self, addresses: Iterable[str]) -> None:
        for raw in addresses:
            self.check_address(raw)

    def check_loaded(self, addresses: Iterable[str]) -> None:
        """Check the canonical address of every run loading produced (seed siblings too)."""
        for address in addresses:
            try:
                self.check_address(address)
            except OutsideRootsError as exc:
                raise OutsideRootsError(
                    f"reading this needs {address}, which is outside the folders this server "
                    "may read (a seed sibling or a run a folder links to)",
                    hint=exc.hint) from None


def _registered(scheme: str) -> bool:
    from .._bridge import registered_schemes

    return scheme in registered_schemes()
