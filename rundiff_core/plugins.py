"""The plugin manager: built-ins through the front door, third parties through entry points.

Environment switches (read when the manager is built):
- `RUNDIFF_LOAD_PLUGINS`: comma list of entry-point plugin names to load; set but empty loads
  none. Built-in plugins always load unless disabled.
- `RUNDIFF_DISABLE_PLUGINS`: comma list of plugin names (built-in or third-party) to skip.
- `RUNDIFF_TRACE_PLUGINS=1`: print every hook call to stderr.

A broken plugin (import failure, misspelled hook, taken scheme) is dropped with a one-line error
naming it and the fix; every other plugin keeps working.
"""

from __future__ import annotations

import difflib
import importlib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import metadata
from types import ModuleType
from typing import Any

import pluggy

from . import hookspecs
from .errors import PluginError, RundiffError
from .registry import AdapterRegistry, AdapterSpec

ENTRY_POINT_GROUP = "rundiff"

DEFAULT_PLUGINS: tuple[str, ...] = (
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


@dataclass
class PluginInfo:
    name: str
    module: str
    package: str
    version: str | None
    builtin: bool
    hooks: list[str] = field(default_factory=list)
    adapters: list[str] = field(default_factory=list)


def _env_list(name: str) -> list[str] | None:
    raw = os.environ.get(name)
    if raw is None:
        return None
    return [p.strip() for p in raw.split(",") if p.strip()]


class Plugins:
    """A loaded plugin set: the pluggy manager, the adapter registry, and what went wrong."""

    def __init__(self, *, builtins: tuple[str, ...] = DEFAULT_PLUGINS, entry_points: bool = True):
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.registry = AdapterRegistry()
        self.errors: list[str] = []
        self.info: dict[str, PluginInfo] = {}
        if os.environ.get("RUNDIFF_TRACE_PLUGINS") == "1":
            self.pm.trace.root.setwriter(sys.stderr.write)
            self.pm.enable_tracing()
        disabled = set(_env_list("RUNDIFF_DISABLE_PLUGINS") or [])
        for module_name in builtins:
            name = module_name.rsplit(".", 1)[-1]
            if name in disabled or module_name in disabled:
                continue
            try:
                module = importlib.import_module(module_name)
            except Exception as exc:  # a built-in that cannot import is a bug, but keep going
                self.errors.append(f"built-in plugin '{name}' failed to import: {exc}")
                continue
            self.add(module, name=name, package="rundiff", version=_version("rundiff"), builtin=True)
        if entry_points:
            self._load_entry_points(disabled)

    # -- loading -------------------------------------------------------------------------------
    def _load_entry_points(self, disabled: set[str]) -> None:
        wanted = _env_list("RUNDIFF_LOAD_PLUGINS")
        for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            if ep.name in disabled or (wanted is not None and ep.name not in wanted):
                continue
            dist = getattr(ep, "dist", None)
            package = dist.name if dist else ep.value.split(":")[0]
            try:
                module = ep.load()
            except Exception as exc:
                self.errors.append(
                    f"plugin '{ep.name}' (package {package}) failed to import: "
                    f"{type(exc).__name__}: {exc}; fix: reinstall {package}, or skip it with "
                    f"RUNDIFF_DISABLE_PLUGINS={ep.name}"
                )
                continue
            self.add(module, name=ep.name, package=package, version=dist.version if dist else None)

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
        bad = [h for h in _hookimpl_names(plugin) if h not in HOOK_NAMES]
        if bad:
            guess = difflib.get_close_matches(bad[0], HOOK_NAMES, n=1)
            fix = f"rename it to '{guess[0]}'" if guess else f"use one of {', '.join(HOOK_NAMES)}"
            self.errors.append(f"plugin '{name}' implements unknown hook '{bad[0]}'; fix: {fix}")
            return False
        try:
            self.pm.register(plugin, name=name)
            self.pm.check_pending()
        except (pluggy.PluginValidationError, ValueError) as exc:
            if self.pm.is_registered(plugin):
                self.pm.unregister(plugin)
            self.errors.append(f"plugin '{name}' is invalid: {exc}")
            return False
        info = PluginInfo(
            name=name,
            module=getattr(plugin, "__name__", type(plugin).__name__),
            package=package,
            version=version,
            builtin=builtin,
            hooks=sorted(_hookimpl_names(plugin)),
        )

        def register(spec: AdapterSpec) -> None:
            if not isinstance(spec, AdapterSpec):
                raise PluginError(f"plugin '{name}' registered {spec!r}, not an AdapterSpec")
            spec = _with_origin(spec, name, package)
            self.registry.register(spec)
            info.adapters.append(spec.name)

        impl = getattr(plugin, "rundiff_register_adapters", None)
        if impl is not None:
            try:
                impl(register=register)
            except RundiffError as exc:
                self.errors.append(exc.message if not exc.hint else f"{exc.message}; fix: {exc.hint}")
                self.registry.unregister_plugin(name)
                self.pm.unregister(plugin)
                return False
            except Exception as exc:
                self.errors.append(
                    f"plugin '{name}' failed while registering adapters: {type(exc).__name__}: {exc}"
                )
                self.registry.unregister_plugin(name)
                self.pm.unregister(plugin)
                return False
        self.info[name] = info
        return True

    def remove(self, name: str) -> None:
        plugin = self.pm.get_plugin(name)
        if plugin is not None:
            self.pm.unregister(plugin)
        self.registry.unregister_plugin(name)
        self.info.pop(name, None)

    # -- calling ---------------------------------------------------------------------------------
    def call_each(self, hook: str, **kwargs: Any) -> Iterator[tuple[str, Any]]:
        """Call a hook on each plugin separately so one broken plugin cannot hide the others."""
        caller = getattr(self.pm.hook, hook)
        for impl in reversed(caller.get_hookimpls()):
            try:
                result = impl.function(**kwargs)
            except RundiffError:
                raise
            except Exception as exc:
                self.errors.append(f"plugin '{impl.plugin_name}' failed in {hook}: {exc}")
                continue
            if result is not None:
                yield impl.plugin_name, result

    def describe(self, *, all_plugins: bool = False) -> list[dict[str, Any]]:
        """Plugin rows for `rundiff plugins` (third-party only unless all_plugins)."""
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
                }
            )
        return rows


def _hookimpl_names(plugin: object) -> list[str]:
    marker = f"{hookspecs.PROJECT}_impl"
    return [n for n in dir(plugin) if hasattr(getattr(plugin, n, None), marker)]


def _with_origin(spec: AdapterSpec, plugin: str, package: str) -> AdapterSpec:
    from dataclasses import replace

    return replace(spec, plugin=spec.plugin or plugin, package=spec.package or package)


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


_CURRENT: Plugins | None = None


def get_plugins() -> Plugins:
    """The process-wide plugin set, built on first use."""
    global _CURRENT
    if _CURRENT is None:
        _CURRENT = Plugins()
    return _CURRENT


def set_plugins(plugins: Plugins | None) -> Plugins | None:
    """Swap the process-wide plugin set (tests); returns the previous one."""
    global _CURRENT
    previous, _CURRENT = _CURRENT, plugins
    return previous
