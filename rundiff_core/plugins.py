"""The plugin manager: built-ins through the front door, third parties through entry points.

Environment switches (read when the manager is built):
- `RUNDIFF_LOAD_PLUGINS`: comma list of entry-point plugin names to load; set but empty loads
  none. Built-in plugins always load unless disabled.
- `RUNDIFF_DISABLE_PLUGINS`: comma list of plugin names (built-in or third-party) to skip; the
  `builtins` plugin (rundiff's own commands and formats) cannot be skipped.
- `RUNDIFF_TRACE_PLUGINS=1`: print every plugin load or skip, adapter registration and hook call
  (arguments and answer) to stderr as `rundiff trace: ...` lines.

A broken plugin (import failure, misspelled hook, taken scheme) is dropped with a one-line error
naming it and the fix; every other plugin keeps working. The process-wide set (`get_plugins()`)
also prints those lines to stderr as it loads, so a broken install fails loudly, not silently.

Finding the `rundiff` entry points means reading the metadata of every installed distribution
(`importlib.metadata`: ~45 ms of the ~130 ms `rundiff --help` took). What that scan found is
kept in `<user cache dir>/plugins/entry-points.json` (`RUNDIFF_CACHE_DIR` when set), keyed by
the interpreter and `sys.path`, and trusted only while every `sys.path` entry (and every
`*.egg-info`, which setuptools rewrites in place) still has the stat it had: installing or
removing a distribution changes its site directory's mtime, so the next start scans again.
Stats younger than two seconds are never cached (file times are coarse), and a metadata finder
other than a sys.path one turns the cache off. `RUNDIFF_PLUGIN_CACHE=0` turns it off too.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from types import ModuleType
from typing import Any, TextIO

import pluggy

from . import hookspecs
from .errors import PluginError, RundiffError
from .layouts import LayoutRegistry, LayoutSpec
from .registry import AdapterRegistry, AdapterSpec
from .reporters import ReporterRegistry, ReporterSpec

ENTRY_POINT_GROUP = "rundiff"

# rundiff's own commands and formats: loaded first, so no later plugin can take their names, and
# never disabled.
ESSENTIAL_PLUGINS: tuple[str, ...] = ("rundiff_core.builtins",)
ESSENTIAL_NAMES = frozenset(m.rsplit(".", 1)[-1] for m in ESSENTIAL_PLUGINS)

# The plugins of the rundiff distribution, named here, imported by name (the core imports neither
# the adapters nor the `rundiff` package): `rundiff.agents` adds `rundiff mcp` through the same
# command hook a third-party package uses.
DEFAULT_PLUGINS: tuple[str, ...] = (
    *ESSENTIAL_PLUGINS,
    "rundiff.agents",
    "rundiff_adapters.wandb",
    "rundiff_adapters.mlflow",
    "rundiff_adapters.neptune",
    "rundiff_adapters.parquet",
    "rundiff_adapters.tensorboard",
    "rundiff_adapters.journal",
    "rundiff_adapters.trajectory",
    "rundiff_adapters.local",
)

HOOK_NAMES = tuple(n for n in dir(hookspecs) if n.startswith("rundiff_"))
_HOOK_PREFIX = f"{hookspecs.PROJECT}_"


class PluginInfo:
    """One loaded plugin, as `rundiff plugins` lists it (a plain class: a dataclass costs more
    start-up to create than every use of this one)."""

    __slots__ = ("name", "module", "package", "version", "builtin", "hooks", "adapters",
                 "layouts", "reporters", "commands")

    def __init__(self, name: str, module: str, package: str, version: str | None, builtin: bool,
                 hooks: list[str] | None = None) -> None:
        self.name, self.module, self.package, self.version = name, module, package, version
        self.builtin = builtin
        self.hooks: list[str] = list(hooks or [])
        self.adapters: list[str] = []
        self.layouts: list[str] = []
        self.reporters: list[str] = []
        self.commands: list[str] = []

    def __repr__(self) -> str:
        return f"PluginInfo({self.name!r}, package={self.package!r}, builtin={self.builtin})"


def _env_list(name: str) -> list[str] | None:
    raw = os.environ.get(name)
    if raw is None:
        return None
    return [p.strip() for p in raw.split(",") if p.strip()]


def _tracing() -> bool:
    return os.environ.get("RUNDIFF_TRACE_PLUGINS", "").strip().lower() in ("1", "true", "yes", "on")


def _one_line(text: object) -> str:
    """Errors are one line each: collapse whatever a plugin's exception printed."""
    return " ".join(str(text).split())


class _PluginManager(pluggy.PluginManager):
    """pluggy's manager, looking for a module's hook implementations among its `rundiff_*` names.

    pluggy inspects every attribute of a plugin (`inspect.getattr_static`: ~300 of them across
    rundiff's own plugin modules at every start). `Plugins.add` refuses, before registering, a
    plugin with a marked attribute not named after a hook (`_check_hook_names`); a module's
    attributes are what that check reads, so in a module no other name can hold a hook and
    skipping them registers the same hooks. Other plugin objects get pluggy's full look."""

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        if not name.startswith(_HOOK_PREFIX) and isinstance(plugin, ModuleType):
            return None
        return super().parse_hookimpl_opts(plugin, name)


class Plugins:
    """A loaded plugin set: the pluggy manager, the adapter registry, and what went wrong.

    `report`: a writable stream that receives each plugin error as it happens; None keeps errors
    only in `self.errors` (isolated sets in tests). `skipped` lists plugins the switches left out.
    """

    def __init__(
        self,
        *,
        builtins: tuple[str, ...] = DEFAULT_PLUGINS,
        entry_points: bool = True,
        report: TextIO | None = None,
    ):
        self.pm = _PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.registry = AdapterRegistry()
        self.reporters = ReporterRegistry()
        self.layouts = LayoutRegistry()
        self.errors: list[str] = []
        self.info: dict[str, PluginInfo] = {}
        self.skipped: list[dict[str, str]] = []
        self.report = report
        self.tracing = _tracing()
        if self.tracing:
            self.pm.trace.root.setwriter(lambda text: sys.stderr.write(text))
            self.pm.enable_tracing()
        disabled = set(_env_list("RUNDIFF_DISABLE_PLUGINS") or [])
        seen: set[str] = set()
        found = installed()
        self.discovery = found.origin  # where the entry points came from: a scan, or the cache
        self.trace(f"rundiff entry points from {found.origin}")
        for module_name in builtins:
            name = module_name.rsplit(".", 1)[-1]
            seen.update((name, module_name))
            if module_name in ESSENTIAL_PLUGINS and disabled & {name, module_name}:
                self.error(f"RUNDIFF_DISABLE_PLUGINS names '{name}', which holds rundiff's own "
                           f"commands and formats and cannot be disabled; fix: remove it from "
                           f"the list")
            elif name in disabled or module_name in disabled:
                self._skip(name, "listed in RUNDIFF_DISABLE_PLUGINS")
                continue
            self.trace(f"load built-in plugin '{name}' from {module_name}")
            try:
                module = importlib.import_module(module_name)
            except Exception as exc:  # a built-in that cannot import is a bug, but keep going
                self.error(
                    f"built-in plugin '{name}' failed to import: {type(exc).__name__}: {exc}; "
                    f"fix: reinstall rundiff, or skip it with RUNDIFF_DISABLE_PLUGINS={name}"
                )
                continue
            self.add(module, name=name, package="rundiff", version=found.rundiff_version,
                     builtin=True)
        if entry_points:
            seen |= self._load_entry_points(disabled, found)
        for name in sorted(disabled - seen) if entry_points else ():
            self.error(
                f"RUNDIFF_DISABLE_PLUGINS names '{name}', which is not an installed plugin; "
                f"fix: use one of {', '.join(sorted(n for n in seen if '.' not in n))}"
            )

    # -- reporting -------------------------------------------------------------------------------
    def error(self, message: str) -> None:
        """Record one plugin error (one line, deduplicated) and report it if a stream is set."""
        line = _one_line(message)
        if line in self.errors:
            return
        self.errors.append(line)
        if self.report is not None:
            self.report.write(f"rundiff: plugin error: {line}\n")
        self.trace(f"error: {line}")

    def trace(self, message: str) -> None:
        """One `rundiff trace:` line on stderr when RUNDIFF_TRACE_PLUGINS=1."""
        if self.tracing:
            sys.stderr.write(f"rundiff trace: {message}\n")

    def _skip(self, name: str, reason: str) -> None:
        self.skipped.append({"name": name, "reason": reason})
        self.trace(f"skip plugin '{name}': {reason}")

    # -- loading -------------------------------------------------------------------------------
    def _load_entry_points(self, disabled: set[str], found: Installed) -> set[str]:
        """Load third-party plugins from the `rundiff` entry-point group; return their names."""
        wanted = _env_list("RUNDIFF_LOAD_PLUGINS")
        eps = sorted(found.entry_points, key=lambda e: e.name)
        names = {ep.name for ep in eps}
        for ep in eps:
            if ep.name in disabled:
                self._skip(ep.name, "listed in RUNDIFF_DISABLE_PLUGINS")
                continue
            if wanted is not None and ep.name not in wanted:
                self._skip(ep.name, "not listed in RUNDIFF_LOAD_PLUGINS")
                continue
            package = ep.package
            self.trace(f"load plugin '{ep.name}' from entry point {ep.value} (package {package})")
            try:
                module = ep.load()
            except Exception as exc:
                self.error(
                    f"plugin '{ep.name}' (package {package}) failed to import: "
                    f"{type(exc).__name__}: {exc}; fix: reinstall {package} (or install what it "
                    f"needs), or skip it with RUNDIFF_DISABLE_PLUGINS={ep.name}"
                )
                continue
            self.add(module, name=ep.name, package=package, version=ep.version)
        for name in wanted or ():
            if name not in names:
                self.error(
                    f"RUNDIFF_LOAD_PLUGINS names '{name}', but no installed package provides a "
                    f"'{ENTRY_POINT_GROUP}' entry point of that name; fix: install it, or use one "
                    f"of: {', '.join(sorted(names)) or '(no third-party plugins installed)'}"
                )
        return names

    def add(
        self,
        plugin: ModuleType | object,
        *,
        name: str,
        package: str = "",
        version: str | None = None,
        builtin: bool = False,
    ) -> bool:
        """Register one plugin and its adapters; on any problem drop it and record why."""
        skip_hint = f"or skip it with RUNDIFF_DISABLE_PLUGINS={name}"
        attrs = _hook_attrs(plugin)
        problem = _check_hook_names(plugin, name, attrs)
        if problem:
            self.error(problem)
            return False
        if self.pm.has_plugin(name):
            self.error(
                f"plugin '{name}' (package {package or '?'}) uses a name another plugin already "
                f"has; fix: rename its '{ENTRY_POINT_GROUP}' entry point, {skip_hint}"
            )
            return False
        try:
            self.pm.register(plugin, name=name)
            self.pm.check_pending()
        except (pluggy.PluginValidationError, ValueError) as exc:
            if self.pm.is_registered(plugin):
                self.pm.unregister(plugin)
            self.error(f"plugin '{name}' is invalid: {_one_line(exc)}; fix: {_validation_fix(exc)}")
            return False
        info = PluginInfo(
            name=name,
            module=getattr(plugin, "__name__", type(plugin).__name__),
            package=package,
            version=version,
            builtin=builtin,
            hooks=sorted(attrs[0]),
        )

        def register(spec: AdapterSpec) -> None:
            if not isinstance(spec, AdapterSpec):
                raise PluginError(
                    f"plugin '{name}' registered {spec!r}, not an AdapterSpec",
                    hint="call register(AdapterSpec(name=..., schemes=(...), source='pkg.mod:Class'))",
                )
            spec = _with_origin(spec, name, package)
            self.registry.register(spec)
            info.adapters.append(spec.name)
            self.trace(
                f"plugin '{name}' registered adapter '{spec.name}' (schemes "
                f"{', '.join(s + ':' for s in spec.schemes)}; priority {spec.priority})"
            )

        def register_layout(spec: LayoutSpec) -> None:
            if isinstance(spec, LayoutSpec):
                spec = replace(spec, plugin=name, builtin=builtin)
            self.layouts.register(spec)
            info.layouts.append(spec.name)
            self.trace(f"plugin '{name}' registered layout '{spec.name}' (priority "
                       f"{spec.priority}, module {spec.module})")

        def register_reporter(spec: ReporterSpec) -> None:
            if isinstance(spec, ReporterSpec):
                spec = replace(spec, plugin=name, builtin=builtin)
            self.reporters.register(spec)
            info.reporters.append(spec.name)
            self.trace(f"plugin '{name}' registered reporter '{spec.name}' for "
                       f"{', '.join(spec.commands)}")

        for hook, what, reg in (("rundiff_register_adapters", "adapters", register),
                                ("rundiff_register_layouts", "layouts", register_layout),
                                ("rundiff_register_reporters", "reporters", register_reporter)):
            impl = getattr(plugin, hook, None)
            if impl is None:
                continue
            self.trace(f"call {name}.{hook}(register=...)")
            if not self._guarded(name, package, f"registering {what}",
                                 functools.partial(impl, register=reg), skip_hint):
                self.registry.unregister_plugin(name)
                self.layouts.unregister_plugin(name)
                self.reporters.unregister_plugin(name)
                self.pm.unregister(plugin)
                return False
        self.info[name] = info
        return True

    def add_commands(self, cli: Any) -> None:
        """Let each plugin add subcommands through `cli` (a `CommandHost`), built-ins first so no
        plugin can take their names (the essential `builtins` before rundiff's other plugins, so
        `rundiff --help` lists its commands first). A plugin whose hook fails is reported and the
        others still get their turn; a failing built-in is a bug and raises."""
        impls = list(reversed(self.pm.hook.rundiff_register_commands.get_hookimpls()))
        for impl in sorted(impls, key=lambda i: (not self._builtin(i.plugin_name),
                                                 i.plugin_name not in ESSENTIAL_NAMES)):
            name = impl.plugin_name
            info = self.info.get(name)
            self.trace(f"call {name}.rundiff_register_commands(cli=...)")
            call = functools.partial(impl.function, cli=cli.for_plugin(name))
            if self._builtin(name):
                call()
                continue
            self._guarded(name, info.package if info else "", "adding commands", call,
                          f"or skip it with RUNDIFF_DISABLE_PLUGINS={name}")

    def _builtin(self, name: str) -> bool:
        info = self.info.get(name)
        return bool(info and info.builtin)

    def _guarded(self, name: str, package: str, doing: str, call: Any, skip_hint: str) -> bool:
        """Run one plugin's registration hook; a failure becomes one recorded error line."""
        try:
            call()
        except RundiffError as exc:
            self.error(f"{exc.message}; fix: {exc.hint or skip_hint}")
            return False
        except Exception as exc:
            self.error(
                f"plugin '{name}' failed while {doing}: {type(exc).__name__}: {exc}; fix: report "
                f"it to the maintainers of {package or name}, {skip_hint}"
            )
            return False
        return True

    def remove(self, name: str) -> None:
        plugin = self.pm.get_plugin(name)
        if plugin is not None:
            self.pm.unregister(plugin)
        self.registry.unregister_plugin(name)
        self.layouts.unregister_plugin(name)
        self.reporters.unregister_plugin(name)
        self.info.pop(name, None)

    # -- calling ---------------------------------------------------------------------------------
    def call_each(self, hook: str, **kwargs: Any) -> Iterator[tuple[str, Any]]:
        """Call a hook on each plugin separately so one broken plugin cannot hide the others."""
        impls = list(reversed(getattr(self.pm.hook, hook).get_hookimpls()))
        if self.tracing:
            self.trace(f"call {hook}({_trace_args(kwargs)}) on {len(impls)} plugin(s)")
        for impl in impls:
            try:
                result = impl.function(**kwargs)
            except RundiffError:
                raise
            except Exception as exc:
                self.error(
                    f"plugin '{impl.plugin_name}' failed in {hook}: {type(exc).__name__}: {exc}; "
                    f"fix: report it to the plugin's maintainers, or skip it with "
                    f"RUNDIFF_DISABLE_PLUGINS={impl.plugin_name}"
                )
                continue
            if self.tracing:
                self.trace(f"{impl.plugin_name}.{hook}({_trace_args(kwargs)}) -> {result!r}")
            if result is not None:
                yield impl.plugin_name, result

    def call_first(self, hook: str, **kwargs: Any) -> Any:
        """The first non-None answer of a `firstresult` hook, isolating plugins that raise."""
        for _plugin, result in self.call_each(hook, **kwargs):
            return result
        return None

    def describe(self, *, all_plugins: bool = False) -> list[dict[str, Any]]:
        """Plugin rows for `rundiff plugins` (third-party only unless all_plugins).

        Keys: name, module, package, version, builtin, hooks, adapters, layouts, reporters,
        commands.
        """
        rows = []
        for info in sorted(self.info.values(), key=lambda i: (not i.builtin, i.name)):
            if info.builtin and not all_plugins:
                continue
            rows.append(
                {
                    "name": info.name,
                    "module": info.module,
                    "package": info.package,
                    "version": info.version,
                    "builtin": info.builtin,
                    "hooks": info.hooks,
                    "adapters": info.adapters,
                    "layouts": info.layouts,
                    "reporters": info.reporters,
                    "commands": info.commands,
                }
            )
        return rows


def _trace_args(kwargs: dict[str, Any]) -> str:
    """Hook arguments for a trace line; mappings (the environment) are summarised, not printed."""
    shown = []
    for key, value in kwargs.items():
        text = f"{{{len(value)} entries}}" if isinstance(value, dict) else repr(value)
        shown.append(f"{key}={text[:300]}")
    return ", ".join(shown)


def _hook_attrs(plugin: object) -> tuple[list[str], list[str]]:
    """(the names whose value carries @hookimpl's mark, the names `rundiff_*` of a callable), from
    one look at each attribute."""
    marker = f"{hookspecs.PROJECT}_impl"
    marked, named = [], []
    for n in dir(plugin):
        value = getattr(plugin, n, None)
        if hasattr(value, marker):
            marked.append(n)
        if n.startswith(_HOOK_PREFIX) and callable(value):
            named.append(n)
    return marked, named


def _check_hook_names(plugin: object, name: str,
                      attrs: tuple[list[str], list[str]] | None = None) -> str | None:
    """A one-line error for a misspelled or undecorated hook, or None when the names are right.
    `attrs`: what `_hook_attrs(plugin)` answers, when already known."""
    found, named = attrs if attrs is not None else _hook_attrs(plugin)
    marked = set(found)
    candidates = marked | set(named)
    for hook in sorted(candidates):
        if hook in HOOK_NAMES:
            if hook not in marked:
                return (
                    f"plugin '{name}' defines {hook} without @hookimpl, so rundiff would never "
                    f"call it; fix: decorate it with @hookimpl (from rundiff_core)"
                )
            continue
        import difflib

        guess = difflib.get_close_matches(hook, HOOK_NAMES, n=1)
        fix = f"rename it to '{guess[0]}'" if guess else f"use one of {', '.join(HOOK_NAMES)}"
        return f"plugin '{name}' implements unknown hook '{hook}'; fix: {fix}"
    return None


def _validation_fix(exc: Exception) -> str:
    """What to change when pluggy rejects a hook implementation (usually its argument names)."""
    import inspect

    text = str(exc)
    for hook in HOOK_NAMES:
        if f"'{hook}'" in text:
            spec = getattr(hookspecs, hook)
            args = ", ".join(inspect.signature(spec).parameters)
            return f"use the hook's argument names: def {hook}({args})"
    return "compare the plugin's hooks with docs/plugins/hooks.md"


def _with_origin(spec: AdapterSpec, plugin: str, package: str) -> AdapterSpec:
    from dataclasses import replace

    return replace(spec, plugin=spec.plugin or plugin, package=spec.package or package)


# -- entry-point discovery ------------------------------------------------------------------------
CACHE_FORMAT = 1
CACHE_KEEP = 32  # interpreter/sys.path combinations remembered (`python -m` from several dirs,
#   several checkouts and venvs): one fewer than the combinations in use means a scan per start
SETTLED_NS = 2_000_000_000  # a stat younger than this is not trusted: file times are coarse


class EntryPoint:
    """One `rundiff` entry point as discovery found it (scanned now, or replayed from the cache).

    `package` and `version` are its distribution's (`package` is the module when the entry point
    has no distribution); `load()` imports it exactly as `importlib.metadata.EntryPoint.load`.
    """

    pattern = r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$"
    __slots__ = ("name", "value", "package", "version")

    def __init__(self, name: str, value: str, package: str | None, version: str | None) -> None:
        self.name, self.value, self.package, self.version = name, value, package, version

    def load(self) -> Any:
        match = re.match(self.pattern, self.value)  # compiled on first use, not at start-up
        module = importlib.import_module(match.group("module"))  # type: ignore[union-attr]
        attrs = filter(None, (match.group("attr") or "").split("."))  # type: ignore[union-attr]
        return functools.reduce(getattr, attrs, module)

    def as_row(self) -> list[str | None]:
        return [self.name, self.value, self.package, self.version]

    def __repr__(self) -> str:
        return f"EntryPoint({self.name!r}, {self.value!r}, package={self.package!r})"


class Installed:
    """What discovery found: the `rundiff` entry points and rundiff's own version.

    `origin` says where from (RUNDIFF_TRACE_PLUGINS prints it): the scan, or the cache file."""

    __slots__ = ("entry_points", "rundiff_version", "origin")

    def __init__(self, entry_points: list[EntryPoint], rundiff_version: str | None,
                 origin: str) -> None:
        self.entry_points, self.rundiff_version, self.origin = entry_points, rundiff_version, origin


def installed() -> Installed:
    """The `rundiff` entry points of the installed distributions, from the cache when it is
    still true, else from `importlib.metadata` (and cached when the install has settled)."""
    path = _cache_file()
    key = _cache_key()
    if path is None or key is None:
        return _scan("a scan of the installed distributions (cache off)")
    entries = _read_cache(path)
    for entry in entries:
        if entry.get("key") == key and _still_true(entry):
            eps = [EntryPoint(*row) for row in entry["eps"]]
            return Installed(eps, entry["rundiff"], f"the cache {path}")
    before = _fingerprint(key[1])
    found = _scan("a scan of the installed distributions")
    after = _fingerprint(key[1])
    if before is None or before != after or not _settled(before):
        found.origin += " (not cached: the install changed in the last seconds)"
        return found
    entry = {"key": key, "paths": before[0], "eggs": before[1],
             "rundiff": found.rundiff_version, "eps": [ep.as_row() for ep in found.entry_points]}
    entries = [entry] + [e for e in entries if e.get("key") != key][:CACHE_KEEP - 1]
    if _write_cache(path, entries):
        found.origin += f" (cached in {path})"
    return found


def _scan(origin: str) -> Installed:
    from importlib import metadata

    eps = []
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(ep, "dist", None)
        eps.append(EntryPoint(ep.name, ep.value, dist.name if dist else ep.value.split(":")[0],
                              dist.version if dist else None))
    try:
        version: str | None = metadata.version("rundiff")
    except metadata.PackageNotFoundError:
        version = None
    return Installed(eps, version, origin)


def user_cache_dir() -> str:
    """RUNDIFF_CACHE_DIR, else `platformdirs.user_cache_dir("rundiff")` (computed here on Linux and
    macOS, where importing platformdirs would cost more than the cache saves)."""
    env = os.environ.get("RUNDIFF_CACHE_DIR")
    if env:
        return env
    if sys.platform == "darwin":
        return os.path.join(os.path.expanduser("~/Library/Caches"), "rundiff")
    if os.name == "posix":
        base = os.environ.get("XDG_CACHE_HOME", "")
        if not base.strip():
            base = os.path.expanduser("~/.cache")
        return os.path.join(base, "rundiff")
    import platformdirs

    return platformdirs.user_cache_dir("rundiff")


def _cache_file() -> str | None:
    if os.environ.get("RUNDIFF_PLUGIN_CACHE", "").strip().lower() in ("0", "false", "no", "off"):
        return None
    try:
        return os.path.join(user_cache_dir(), "plugins", "entry-points.json")
    except Exception:  # no home directory, say: scan every time
        return None


def _cache_key() -> list[Any] | None:
    """[interpreter, absolute sys.path]; None when a metadata finder other than a sys.path one
    is installed (its distributions could change without any stat showing it)."""
    for finder in sys.meta_path:
        if getattr(finder, "find_distributions", None) is not None and not _path_based(finder):
            return None
    return [sys.executable, [os.path.abspath(p or ".") for p in sys.path if isinstance(p, str)]]


def _path_based(finder: Any) -> bool:
    """The standard path finder, or the importlib_metadata backport's, which takes its place
    once imported (it removes the standard one's find_distributions) and searches sys.path
    the same way."""
    from importlib.machinery import PathFinder

    kind = finder if isinstance(finder, type) else type(finder)
    return finder is PathFinder or (kind.__module__, kind.__name__) == ("importlib_metadata",
                                                                       "MetadataPathFinder")


def _stat(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_ino, st.st_dev, st.st_size]


def _fingerprint(paths: list[str]) -> tuple[list[Any], list[Any]] | None:
    """The stats the cache is keyed on: each sys.path entry's own, and each `*.egg-info`'s (a dir,
    its entry_points.txt and PKG-INFO), which setuptools rewrites in place without touching its
    parent. A `*.dist-info` is never rewritten in place: installers add and remove it, which
    changes the parent's mtime."""
    stats, eggs = [], []
    for root in paths:
        stats.append(_stat(root))
        try:
            names = os.listdir(root) if os.path.isdir(root) else []
        except OSError:
            return None
        for name in sorted(names):
            low = name.lower()
            if low.endswith(".egg-info") or (low == "egg-info" and root.lower().endswith(".egg")):
                egg = os.path.join(root, name)
                eggs.append([egg, _egg_stats(egg)])
    return stats, eggs


def _egg_stats(egg: str) -> list[Any]:
    return [_stat(egg), _stat(os.path.join(egg, "entry_points.txt")),
            _stat(os.path.join(egg, "PKG-INFO"))]


def _settled(fingerprint: tuple[list[Any], list[Any]]) -> bool:
    """Every recorded mtime is old enough that a later change cannot share it."""
    stats, eggs = fingerprint
    horizon = time.time_ns() - SETTLED_NS
    every = [*stats, *(s for _egg, group in eggs for s in group)]
    return all(s is None or s[0] < horizon for s in every)


def _still_true(entry: dict[str, Any]) -> bool:
    """A cached scan holds while no sys.path entry and no egg-info changed (no listing needed:
    a directory's mtime changes whenever an entry is added, removed or renamed in it)."""
    try:
        paths = entry["key"][1]
        if [_stat(p) for p in paths] != entry["paths"]:
            return False
        return all(_egg_stats(egg) == stats for egg, stats in entry["eggs"])
    except (KeyError, TypeError, ValueError, IndexError):
        return False


def _read_cache(path: str) -> list[dict[str, Any]]:
    try:
        with open(path, encoding="utf-8") as fh:
            data = _json_loads(fh.read())
    except (OSError, ValueError):
        return []
    if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT:
        return []
    entries = data.get("entries")
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


def _json_loads(text: str) -> Any:
    """`json.loads(text)` without importing the json package (its decoder, scanner and encoder
    modules cost ~2 ms of every start, for a file of a few KiB): the C scanner json.loads runs,
    with json.loads' defaults, and the same rules for white space around the value. A ValueError
    when the text is not one JSON value; json.loads itself where the C scanner is missing."""
    try:
        from _json import make_scanner
    except ImportError:  # another Python implementation
        import json

        return json.loads(text)
    white = " \t\n\r"
    start = len(text) - len(text.lstrip(white))
    try:
        value, end = make_scanner(_JSON_DEFAULTS)(text, start)
    except StopIteration:  # no JSON value starts there
        raise ValueError("not JSON") from None
    if text[end:].strip(white):
        raise ValueError("extra data after the JSON value")
    return value


class _JsonDefaults:
    """The decoder settings `_json.make_scanner` reads: those of json.loads without arguments."""

    def __init__(self) -> None:
        inf = float("inf")
        self.strict = True
        self.object_hook = None
        self.object_pairs_hook = None
        self.parse_float = float
        self.parse_int = int
        self.parse_constant = {"-Infinity": -inf, "Infinity": inf, "NaN": float("nan")}.__getitem__
        self.memo: dict[str, str] = {}


_JSON_DEFAULTS = _JsonDefaults()


def _write_cache(path: str, entries: list[dict[str, Any]]) -> bool:
    """Write atomically (a reader sees the old file or the new one); False when it cannot."""
    import json

    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump({"format": CACHE_FORMAT, "entries": entries}, fh)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False
    return True


_CURRENT: Plugins | None = None


class _Stderr:
    """Writes to whatever sys.stderr is at the time (pytest swaps it per test)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)


def layouts_in_order() -> LayoutRegistry:
    """The layouts every loaded plugin registered (`rundiff_register_layouts`), for `local:`."""
    return get_plugins().layouts


def get_plugins() -> Plugins:
    """The process-wide plugin set, built on first use; its plugin errors go to stderr."""
    global _CURRENT
    if _CURRENT is None:
        _CURRENT = Plugins(report=_Stderr())  # type: ignore[arg-type]
    return _CURRENT


def set_plugins(plugins: Plugins | None) -> Plugins | None:
    """Swap the process-wide plugin set (tests); returns the previous one."""
    global _CURRENT
    previous, _CURRENT = _CURRENT, plugins
    return previous
