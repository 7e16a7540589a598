"""The layout contract: how a package teaches `local:` a folder layout without writing an adapter.

A *layout* is one framework's way of leaving a run on disk (Detectron2's `metrics.json` beside
`config.yaml`, Ultralytics' `results.csv` beside `args.yaml`, …). It is a module with

- `claim(folder: LayoutFolder) -> Claimed | None` — recognise a folder by its signature files (read a
  few KiB at most, never write) and say which runs it holds and which sub-folders belong to them;
- `claim_file(path: str) -> list[LayoutRun] | None` (optional) — the same for a file given alone;
- `meta(run: LayoutRun) -> LayoutMeta` — config, summary, status, notes, declared directions;
- `history(run: LayoutRun) -> (frame or HistoryColumns, notes)` — every point, never sampled,
  with `attrs["key_files"]` saying which file each key came from where there are several;
- `DIRECTIONS` (optional) — `{key glob: "min" | "max"}` the framework defines for its keys.

Layouts are registered with `rundiff_register_layouts(register)` — rundiff's own through the same
hook — as `register(LayoutSpec(name, module, summary, priority))`. `local:` offers every folder to
them by (priority, name); the first claim wins. The module is imported when a path is first read,
never at start-up. `rundiff_core.testing.LayoutContract` tests a layout the way `SourceContract`
tests an adapter.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from .errors import PluginError


@dataclass
class LayoutRun:
    """One run a layout claimed: the path that names it, its layout and the files it is read
    from. `sniffs` holds what the claim already learnt (a file's sniffed shape, a selector)."""

    path: str
    layout: str
    files: list[str] = field(default_factory=list)
    reason: str = ""
    sniffs: dict[str, Any] = field(default_factory=dict)


@dataclass
class Claimed:
    """What a layout's `claim` found in a folder: its runs, and the sub-folder names that belong
    to them (checkpoint snapshots, a `vis_data/`) so the walk does not list them again."""

    runs: list[LayoutRun]
    consumed: set[str] = field(default_factory=set)


@dataclass
class LayoutMeta:
    """What a layout read besides the history. `notes` say which file was read as what;
    `goals` are directions the files declare ({key: "min" | "max"}, with `goal_sources`
    saying who declared each); `arm` is the experiment name seeds share (default: the folder
    name without its seed)."""

    config: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    status: str = "unknown"
    notes: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    arm: str | None = None
    events: list[Any] = field(default_factory=list)
    goals: dict[str, str] = field(default_factory=dict)
    goal_sources: dict[str, str] = field(default_factory=dict)


@dataclass
class LayoutFolder:
    """A folder as the walk sees it: its path and the names of its files and sub-folders."""

    path: str
    files: list[str]
    dirs: list[str]

    def __post_init__(self) -> None:
        self._names = set(self.files)

    def has(self, *names: str) -> bool:
        """Every one of `names` is a file here."""
        return all(n in self._names for n in names)

    def any(self, *names: str) -> list[str]:
        """Which of `names` are files here, in the order given."""
        return [n for n in names if n in self._names]

    def join(self, *parts: str) -> str:
        return os.path.join(self.path, *parts)

    def head(self, name: str, n: int = 4096) -> bytes:
        """The first `n` bytes of a file here (b"" when unreadable)."""
        try:
            with open(self.join(name), "rb") as fh:
                return fh.read(n)
        except OSError:
            return b""


@dataclass(frozen=True)
class LayoutSpec:
    """A registered layout: its name (`metrics/…` keys never carry it), the dotted module that
    implements it, what it claims (one line for the detection-order docs), and its priority
    (lower first; rundiff's own use 10–990). `plugin`/`builtin` are filled in by rundiff."""

    name: str
    module: str
    summary: str
    priority: int = 500
    one_run: str = ""  # what one run is, for the docs table ("the output folder", "each file")
    plugin: str = ""
    builtin: bool = False

    def load(self) -> ModuleType:
        """The implementing module (imported once); a module without `claim`, `meta` and
        `history` is a PluginError naming what is missing."""
        module = importlib.import_module(self.module)
        missing = [f for f in ("claim", "meta", "history") if not callable(getattr(module, f, None))]
        if missing:
            raise PluginError(f"layout '{self.name}' ({self.module}) has no {', '.join(missing)}",
                              hint="a layout module defines claim(folder), meta(run), history(run)")
        return module


class LayoutRegistry:
    """Every registered layout, in detection order; a name registered twice is an error."""

    def __init__(self) -> None:
        self._specs: dict[str, LayoutSpec] = {}
        self._modules: dict[str, ModuleType] = {}

    def register(self, spec: LayoutSpec) -> None:
        if not isinstance(spec, LayoutSpec):
            raise PluginError(f"registered {spec!r}, not a LayoutSpec",
                              hint="call register(LayoutSpec(name=..., module='pkg.mod', summary=...))")
        if spec.name in self._specs:
            other = self._specs[spec.name]
            raise PluginError(f"layout '{spec.name}' is registered by '{other.plugin}' and "
                              f"'{spec.plugin}'", hint="rename one of them")
        self._specs[spec.name] = spec

    def unregister_plugin(self, plugin: str) -> None:
        self._specs = {k: v for k, v in self._specs.items() if v.plugin != plugin}
        self._modules = {k: v for k, v in self._modules.items() if k in self._specs}

    def ordered(self) -> list[LayoutSpec]:
        return sorted(self._specs.values(), key=lambda s: (s.priority, s.name))

    def get(self, name: str) -> LayoutSpec | None:
        return self._specs.get(name)

    def module(self, name: str) -> ModuleType:
        hit = self._modules.get(name)
        if hit is None:
            hit = self._modules[name] = self._specs[name].load()
        return hit

    def modules(self) -> Iterator[tuple[LayoutSpec, ModuleType]]:
        """(spec, module) in detection order, importing each module once."""
        for spec in self.ordered():
            yield spec, self.module(spec.name)

    def __len__(self) -> int:
        return len(self._specs)


def layout_table_markdown(specs: list[LayoutSpec]) -> str:
    """The detection-order table of docs/local.md (a test keeps the page equal to it)."""
    rows = ["| order | priority | layout | claims | one run is |", "|---:|---:|---|---|---|"]
    for i, s in enumerate(specs, start=1):
        rows.append(f"| {i} | {s.priority} | `{s.name}` | {s.summary} | {s.one_run or 'the folder'} |")
    return "\n".join(rows) + "\n"


LayoutClaimer = Callable[[LayoutFolder], "Claimed | None"]

__all__ = ["Claimed", "LayoutFolder", "LayoutMeta", "LayoutRegistry", "LayoutRun", "LayoutSpec",
           "layout_table_markdown"]
