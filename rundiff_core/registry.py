"""Adapter specs and the registry that validates them and imports their sources lazily."""

from __future__ import annotations

import importlib
import importlib.util
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import MissingDependencyError, PluginError
from .hookspecs import hookimpl

if TYPE_CHECKING:
    from .claims import Claim, ProjectClaim


def __getattr__(name: str) -> Any:  # `from rundiff_core.registry import Claim` still works
    if name in ("Claim", "ProjectClaim"):
        from . import claims

        return getattr(claims, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class OptionSpec:
    """A global command-line option an adapter's backend needs, applied as an environment variable.

    `rundiff --tracking-uri URI …` sets `MLFLOW_TRACKING_URI=URI` before the command runs: the
    backend reads its usual variable, so the option and the variable can never disagree.
    """

    flag: str
    env: str
    help: str = ""
    metavar: str = "VALUE"


@dataclass(frozen=True)
class AdapterSpec:
    """What a plugin tells rundiff about one adapter.

    `source` is a dotted path `"package.module:Class"`, imported on first use so that loading
    plugins imports no tracker SDK. `priority` ranks sniffing claims (lower wins; containers
    before what they may contain). `requires` lists import names of optional packages;
    `install_hint` is what to tell a user who lacks them. `options` are global command-line
    options the backend takes (`OptionSpec`), so core names no backend's settings.
    """

    name: str
    schemes: tuple[str, ...]
    source: str
    priority: int = 50
    requires: tuple[str, ...] = ()
    install_hint: str | None = None
    summary: str = ""
    options: tuple[OptionSpec, ...] = ()
    plugin: str = field(default="", compare=False)
    package: str = field(default="", compare=False)

    def missing_requirements(self) -> list[str]:
        """Import names from `requires` that are not installed (checked without importing)."""
        missing = []
        for mod in self.requires:
            try:
                if importlib.util.find_spec(mod) is None:
                    missing.append(mod)
            except (ImportError, ValueError):
                missing.append(mod)
        return missing

    def load_source_class(self) -> type:
        """Import the source class, translating a missing optional package into a clear error."""
        module_name, _, attr = self.source.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            top = (exc.name or "").split(".")[0]
            if top in {r.split(".")[0] for r in self.requires}:
                raise MissingDependencyError(
                    f"the {self.name} adapter needs the '{top}' package",
                    hint=self.install_hint or f"pip install {top}",
                ) from exc
            raise
        return getattr(module, attr)


def claim_priority(claim: Claim | ProjectClaim, spec: AdapterSpec) -> int:
    """The number a claim ranks by: its own priority when it sets one, else its adapter's."""
    return spec.priority if claim.priority is None else claim.priority


def adapters_hook(*specs: AdapterSpec) -> Callable[..., None]:
    """The `rundiff_register_adapters` hook of a plugin whose adapters are fixed, so a plugin
    module declares them instead of writing the hook:
    `rundiff_register_adapters = adapters_hook(AdapterSpec(...))`. The specs are checked when the
    hook runs, exactly as if the plugin had called `register` itself."""

    @hookimpl
    def rundiff_register_adapters(register: Callable[[AdapterSpec], None]) -> None:
        for spec in specs:
            register(spec)

    return rundiff_register_adapters


_SCHEME = re.compile(r"[a-z][a-z0-9+._-]+")  # two letters at least: one letter is a drive
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_SOURCE = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")
_FLAG = re.compile(r"--[a-z][a-z0-9]*(-[a-z0-9]+)*")
_ENV = re.compile(r"[A-Z][A-Z0-9_]*")
CORE_FLAGS = frozenset({"--debug", "--help"})  # rundiff's own global options


def _validate(spec: AdapterSpec) -> None:
    """Refuse a malformed spec at registration, where the plugin author sees it."""
    who = f"plugin '{spec.plugin}'" if spec.plugin else "a plugin"

    def bad(what: str, fix: str) -> PluginError:
        return PluginError(f"{who} registers adapter {spec.name!r} with {what}", hint=fix)

    if not isinstance(spec.name, str) or not _NAME.fullmatch(spec.name):
        raise bad("an invalid name", "use a short name such as 'lightning_csv'")
    if isinstance(spec.schemes, str) or not isinstance(spec.schemes, tuple | list):
        raise bad(f"schemes={spec.schemes!r}", f"pass a tuple: schemes=({spec.schemes!r},)")
    for scheme in spec.schemes:
        if not isinstance(scheme, str) or not _SCHEME.fullmatch(scheme):
            raise bad(
                f"scheme {scheme!r}",
                "use lower-case letters, digits, '+', '.', '_' or '-', at least two characters, "
                "without the colon",
            )
    if not isinstance(spec.source, str) or not _SOURCE.fullmatch(spec.source):
        raise bad(f"source={spec.source!r}", "name the class by dotted path: 'package.module:Class'")
    if isinstance(spec.priority, bool) or not isinstance(spec.priority, int):
        raise bad(f"priority={spec.priority!r}", "use an int (lower wins; contrib packages use 70+)")
    if isinstance(spec.requires, str) or not isinstance(spec.requires, tuple | list):
        raise bad(f"requires={spec.requires!r}", f"pass a tuple: requires=({spec.requires!r},)")
    if not isinstance(spec.options, tuple | list):
        raise bad(f"options={spec.options!r}", "pass a tuple of OptionSpec")
    for opt in spec.options:
        if not isinstance(opt, OptionSpec):
            raise bad(f"option {opt!r}", "pass OptionSpec(flag='--my-uri', env='MY_URI', help=...)")
        if not isinstance(opt.flag, str) or not _FLAG.fullmatch(opt.flag) or opt.flag in CORE_FLAGS:
            raise bad(f"option flag {opt.flag!r}",
                      "use a long flag such as '--tracking-uri' that rundiff itself does not have")
        if not isinstance(opt.env, str) or not _ENV.fullmatch(opt.env):
            raise bad(f"option env {opt.env!r}", "name an environment variable, e.g. 'MLFLOW_TRACKING_URI'")


class AdapterRegistry:
    """Adapters by name and scheme; refuses a scheme two adapters want."""

    def __init__(self) -> None:
        self._by_name: dict[str, AdapterSpec] = {}
        self._by_scheme: dict[str, AdapterSpec] = {}

    def register(self, spec: AdapterSpec) -> None:
        """Add one adapter, or raise PluginError naming the plugin and the fix."""
        if not isinstance(spec, AdapterSpec):
            raise PluginError(
                f"plugin {spec!r} registered something that is not an AdapterSpec",
                hint="call register(AdapterSpec(...)) from rundiff_register_adapters",
            )
        _validate(spec)
        skip = f"RUNDIFF_DISABLE_PLUGINS={spec.plugin}" if spec.plugin else "RUNDIFF_DISABLE_PLUGINS"
        if spec.name in self._by_name:
            other = self._by_name[spec.name]
            raise PluginError(
                f"plugin '{spec.plugin}' registers adapter name '{spec.name}', already registered "
                f"by plugin '{other.plugin}'",
                hint=f"rename the adapter, or skip one plugin with {skip}",
            )
        for opt in spec.options:
            owner = self.option_owner(opt.flag)
            if owner is not None:
                raise PluginError(
                    f"plugin '{spec.plugin}' gives adapter '{spec.name}' the option {opt.flag}, "
                    f"which adapter '{owner.name}' from plugin '{owner.plugin}' already has",
                    hint=f"choose another flag, or skip one plugin with {skip}",
                )
        for scheme in spec.schemes:
            if scheme in self._by_scheme:
                other = self._by_scheme[scheme]
                raise PluginError(
                    f"plugin '{spec.plugin}' registers scheme '{scheme}:' for adapter "
                    f"'{spec.name}', but it is already taken by adapter '{other.name}' from "
                    f"plugin '{other.plugin}'",
                    hint=f"choose another scheme for adapter '{spec.name}', or skip one plugin "
                    f"with {skip}",
                )
        self._by_name[spec.name] = spec
        for scheme in spec.schemes:
            self._by_scheme[scheme] = spec

    def unregister_plugin(self, plugin: str) -> None:
        """Drop every adapter a plugin registered (used when a plugin fails half-way)."""
        for name in [n for n, s in self._by_name.items() if s.plugin == plugin]:
            spec = self._by_name.pop(name)
            for scheme in spec.schemes:
                self._by_scheme.pop(scheme, None)

    def by_scheme(self, scheme: str) -> AdapterSpec | None:
        return self._by_scheme.get(scheme)

    def by_name(self, name: str) -> AdapterSpec | None:
        return self._by_name.get(name)

    def option_owner(self, flag: str) -> AdapterSpec | None:
        """The adapter that declared global option `flag`, if any."""
        return next((s for s in self._by_name.values() if any(o.flag == flag for o in s.options)),
                    None)

    def options(self) -> list[tuple[AdapterSpec, OptionSpec]]:
        """Every adapter's global options, in detection order."""
        return [(spec, opt) for spec in self for opt in spec.options]

    @property
    def schemes(self) -> list[str]:
        return sorted(self._by_scheme)

    def __iter__(self) -> Iterable[AdapterSpec]:
        return iter(sorted(self._by_name.values(), key=lambda s: (s.priority, s.name)))

    def __len__(self) -> int:
        return len(self._by_name)

    def describe(self) -> list[dict[str, Any]]:
        """One row per adapter, in detection order, for `rundiff adapters`."""
        rows = []
        for spec in self:
            missing = spec.missing_requirements()
            rows.append(
                {
                    "name": spec.name,
                    "schemes": list(spec.schemes),
                    "priority": spec.priority,
                    "plugin": spec.plugin,
                    "package": spec.package,
                    "installed": not missing,
                    "missing": missing,
                    "install_hint": spec.install_hint if missing else None,
                    "summary": spec.summary,
                }
            )
        return rows
