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
never at start-up; with a `signature` (globs of names the claim cannot do without), only when a
folder's names match it. `rundiff_core.testing.LayoutContract` tests a layout the way
`SourceContract` tests an adapter.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .errors import PluginError

if TYPE_CHECKING:
    from .layout_meta import LayoutMeta
    from .layout_model import Claimed, LayoutFolder, LayoutRun

# What a layout's functions take and return lives in `layout_model` (claims) and `layout_meta`:
# every start registers layouts (LayoutSpec, here), but only sniffing or reading a path builds
# folders, claims and metadata.
def __getattr__(name: str) -> Any:  # `from rundiff_core.layouts import LayoutRun` still works
    if name in ("Claimed", "LayoutFolder", "LayoutRun"):
        from . import layout_model

        return getattr(layout_model, name)
    if name == "LayoutMeta":
        from .layout_meta import LayoutMeta

        return LayoutMeta
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    # Globs (case ignored) of which a folder's own name, or a name of its files or sub-folders,
    # must match one for `claim` to have a chance — a file's name for `claim_file`. A cheap
    # signature check: without a match the module is neither imported nor asked. Empty: always.
    signature: tuple[str, ...] = ()

    def may_claim(self, names: Iterable[str] | SignatureNames) -> bool:
        """Whether `claim` (or `claim_file`) is worth asking about a folder or file with these
        names: always without a `signature`, else when one name matches one of its globs."""
        if not self.signature:
            return True
        folder = names if isinstance(names, SignatureNames) else SignatureNames(names)
        return folder.match(tuple(self.signature))

    def load(self) -> ModuleType:
        """The implementing module (imported once); a module without `claim`, `meta` and
        `history` is a PluginError naming what is missing."""
        module = importlib.import_module(self.module)
        missing = [f for f in ("claim", "meta", "history") if not callable(getattr(module, f, None))]
        if missing:
            raise PluginError(f"layout '{self.name}' ({self.module}) has no {', '.join(missing)}",
                              hint="a layout module defines claim(folder), meta(run), history(run)")
        return module


class SignatureNames:
    """A folder's names (its own, its files', its sub-folders'), lower-cased once, as each
    layout's signature check asks of them: a glob of `*` and `?` is matched with string
    operations, as `fnmatch.fnmatchcase` would, without compiling a regex (only `[…]` is left
    to fnmatch)."""

    __slots__ = ("lowered", "known")

    def __init__(self, names: Iterable[str]) -> None:
        self.lowered = [n.lower() for n in names]
        self.known = set(self.lowered)

    def match(self, signature: tuple[str, ...]) -> bool:
        """Whether one name matches one of the globs (case ignored)."""
        for glob in signature:
            g = glob.lower()
            if "[" in g:
                import fnmatch

                if any(fnmatch.fnmatchcase(n, g) for n in self.lowered):
                    return True
            elif "*" not in g and "?" not in g:
                if g in self.known:
                    return True
            elif any(glob_match(n, g) for n in self.lowered):
                return True
        return False


def glob_match(name: str, glob: str) -> bool:
    """`fnmatch.fnmatchcase(name, glob)` for a glob of literal characters, `*` and `?`."""
    parts = glob.split("*")
    if len(parts) == 1:
        return _fixed(name, glob)
    first, last = parts[0], parts[-1]
    if len(name) < len(first) + len(last) or not _fixed(name[:len(first)], first) or \
            not _fixed(name[len(name) - len(last):], last):
        return False
    pos, end = len(first), len(name) - len(last)
    for middle in parts[1:-1]:  # each as early as it fits: the leftmost match never loses
        found = _find(name, middle, pos, end)
        if found < 0:
            return False
        pos = found + len(middle)
    return True


def _fixed(text: str, glob: str) -> bool:
    """`text` matches `glob` (literal characters and `?`) character for character."""
    if "?" not in glob:
        return text == glob
    return len(text) == len(glob) and all(g == "?" or g == c for g, c in zip(glob, text, strict=True))


def _find(name: str, glob: str, start: int, end: int) -> int:
    """Where `glob` (literals and `?`) first matches inside name[start:end], or -1."""
    if "?" not in glob:
        return name.find(glob, start, end)
    for i in range(start, end - len(glob) + 1):
        if _fixed(name[i:i + len(glob)], glob):
            return i
    return -1


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
        if isinstance(spec.signature, str) or not isinstance(spec.signature, tuple | list) or \
                not all(isinstance(g, str) and g for g in spec.signature):
            raise PluginError(f"layout '{spec.name}' has signature={spec.signature!r}",
                              hint="pass a tuple of file-name globs, e.g. signature=('run.json',)")
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

    def modules(self, names: Iterable[str] | None = None) -> Iterator[tuple[LayoutSpec, ModuleType]]:
        """(spec, module) in detection order, importing each module once; given the `names` of
        a folder (its own, its files', its sub-folders') or of a file, only the layouts whose
        `signature` one of them matches, so no other layout's module is imported."""
        folder = None if names is None else SignatureNames(names)
        for spec in self.ordered():
            if folder is None or spec.may_claim(folder):
                yield spec, self.module(spec.name)

    def __len__(self) -> int:
        return len(self._specs)


def layout_table_markdown(specs: list[LayoutSpec]) -> str:
    """The detection-order table of docs/local.md (a test keeps the page equal to it)."""
    rows = ["| order | priority | layout | claims | one run is |", "|---:|---:|---|---|---|"]
    for i, s in enumerate(specs, start=1):
        rows.append(f"| {i} | {s.priority} | `{s.name}` | {s.summary} | {s.one_run or 'the folder'} |")
    return "\n".join(rows) + "\n"


LayoutClaimer = Callable[["LayoutFolder"], "Claimed | None"]

__all__ = ["Claimed", "LayoutFolder", "LayoutMeta", "LayoutRegistry", "LayoutRun", "LayoutSpec",
           "layout_table_markdown"]
