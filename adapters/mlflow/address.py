"""The `mlflow:` address grammar: `mlflow:[STORE#]SELECTOR` or `mlflow:STORE`.

STORE is a tracking URI (`sqlite:///rel.db`, `sqlite:////abs.db`, `file:///abs/mlruns`,
`http(s)://host:port`, any other URI the MLflow client knows) or a path on disk (an `mlruns/`
folder, a folder holding `mlruns/` or `mlflow.db`, a sqlite file, or an experiment or run folder
inside a file store). Without `#`, a locator that is a URI or an existing path is the store;
anything else is a SELECTOR in the default store: `MLFLOW_TRACKING_URI`, else `./mlruns`, else
`./mlflow.db`. SELECTOR is empty (every run), a run id, an experiment (name or id), or
`EXPERIMENT/RUN` (run name or id). See docs/adapters/mlflow.md.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

from rundiff_core import AddressError, InputError, redact_text

from .layout import DEFAULT_DB, DEFAULT_DIR, find_store, is_file_store, is_mlflow_sqlite

_URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):")  # two letters or more: `C:` is a drive


@dataclass(frozen=True)
class Store:
    """Where runs live. `kind` is "file" or "sqlite" (read directly) or "remote" (the client)."""

    kind: str
    location: str  # absolute path (file, sqlite) or the tracking URI (remote)

    @property
    def uri(self) -> str:
        """The MLflow tracking URI for this store (what the client would be given)."""
        if self.kind == "sqlite":
            return "sqlite:///" + self.location
        if self.kind == "file":
            return "file://" + self.location
        return self.location

    @property
    def display(self) -> str:
        """The store part of canonical run addresses (credentials in a URI redacted)."""
        return redact_text(self.location) if self.kind == "remote" else self.location


@dataclass(frozen=True)
class Locator:
    store: Store
    selector: str


def is_uri(text: str) -> bool:
    return bool(_URI.match(text)) or text == "databricks"


def store_from_path(path: str) -> tuple[Store, str]:
    """A store (and the selector a run or experiment folder implies) from a path on disk."""
    found = find_store(path)
    if found is None:
        if not os.path.exists(os.path.expanduser(path)):
            raise InputError(f"no such MLflow store: {path}",
                             hint="give an mlruns/ folder, a sqlite file, or a tracking URI")
        damaged_sqlite(path)
        raise InputError(
            f"{path} is not an MLflow store",
            hint="give an mlruns/ folder (numbered experiment folders with meta.yaml), an MLflow "
            "sqlite database, or a folder holding one",
        )
    return Store(found.kind, found.store), found.selector


def damaged_sqlite(path: str) -> None:
    """A SQLite file SQLite refuses is said to be damaged (and of which kind, when its pages
    still tell) instead of "not an MLflow store"; anything else returns."""
    import sqlite3

    from .sqlite_salvage import is_damage, kind_of, quick_damage, table_names

    path = os.path.expanduser(path)
    if not os.path.isfile(path):
        return
    try:
        with open(path, "rb") as fh:
            head = fh.read(16)
        if head != b"SQLite format 3\x00" and not path.lower().endswith(
                (".db", ".sqlite", ".sqlite3")):
            return
        names, error = table_names(path)
        if error is None and names:  # the schema reads: its data pages may not
            error = quick_damage(path)
    except (OSError, ValueError, sqlite3.Error) as exc:
        if isinstance(exc, sqlite3.Error) and not is_damage(exc):
            return
        names, error = set(), str(exc)
    if error is None or (head != b"SQLite format 3\x00" and not names):
        return
    name = os.path.basename(path)
    kind = kind_of(names)
    if kind is None:
        what = "whose schema is lost, so its kind cannot be told" if not names else \
            f"whose tables ({', '.join(sorted(names)[:4])}{', …' if len(names) > 4 else ''}) are " \
            "no store rundiff knows"
        raise InputError(f"{name}: a damaged SQLite file {what} ({error})",
                         hint="restore it from a backup, or let `sqlite3 FILE .recover` rebuild "
                         "a copy of what SQLite can read")
    raise InputError(f"{name}: a damaged {kind} store ({error}), not an MLflow store",
                     hint=f"read it as what it is: rundiff ls local:{path}")


def sqlite_path(uri: str) -> str:
    # SQLAlchemy: sqlite:///relative/path.db, sqlite:////absolute/path.db; query string ignored
    rest = uri.split(":", 1)[1].split("?", 1)[0]
    if not rest.startswith("//") or rest in ("//", "///"):
        raise AddressError(f"cannot read the sqlite URI {uri!r}",
                           hint="use sqlite:///relative/path.db or sqlite:////absolute/path.db")
    return unquote(rest[3:]) if rest.startswith("///") else unquote(rest[2:])


def store_from_text(text: str) -> tuple[Store, str]:
    """Parse a tracking URI or path. Local stores must already exist (nothing is ever created)."""
    low = text.lower()
    if low.startswith("sqlite:"):
        path = sqlite_path(text)
        if not is_mlflow_sqlite(path):
            if not os.path.isfile(path):
                raise InputError(f"no such MLflow database: {path} (from {text})",
                                 hint="sqlite:///rel.db is relative to the working directory; "
                                 "sqlite:////abs.db is absolute")
            damaged_sqlite(path)
            raise InputError(f"{path} is not an MLflow sqlite database (no runs/metrics tables)")
        return Store("sqlite", os.path.abspath(path)), ""
    if low.startswith("file:"):
        parts = urlsplit(text)
        if parts.netloc not in ("", "localhost"):
            raise AddressError(f"cannot read a file URI on another host: {text}")
        return store_from_path(url2pathname(parts.path))
    if is_uri(text):
        return Store("remote", text.rstrip("/")), ""
    return store_from_path(text)


def default_store(environ: Mapping[str, str], cwd: str | None = None) -> Store:
    """MLflow's own default: MLFLOW_TRACKING_URI, else ./mlruns (with data), else ./mlflow.db."""
    uri = environ.get("MLFLOW_TRACKING_URI", "").strip()
    if uri:
        store, selector = store_from_text(uri)
        if selector:
            raise AddressError(f"MLFLOW_TRACKING_URI={uri} names a run or experiment folder",
                               hint="point MLFLOW_TRACKING_URI at the store (the mlruns folder)")
        return store
    cwd = cwd or os.getcwd()
    if is_file_store(os.path.join(cwd, DEFAULT_DIR)):
        return Store("file", os.path.join(cwd, DEFAULT_DIR))
    if is_mlflow_sqlite(os.path.join(cwd, DEFAULT_DB)):
        return Store("sqlite", os.path.join(cwd, DEFAULT_DB))
    raise InputError(
        "no MLflow store given, MLFLOW_TRACKING_URI is not set and there is no ./mlruns or "
        "./mlflow.db here",
        hint="name the store: mlflow:path/to/mlruns#SELECTOR, mlflow:sqlite:///mlflow.db#SELECTOR "
        "or mlflow:http://host:5000#SELECTOR (or set MLFLOW_TRACKING_URI)",
    )


def parse_locator(locator: str, environ: Mapping[str, str] | None = None) -> Locator:
    """Split an `mlflow:` locator into a store and a selector (see the module docstring)."""
    environ = os.environ if environ is None else environ
    locator = locator.strip()
    if "#" in locator:
        store_text, selector = locator.split("#", 1)
        if not store_text:
            return Locator(default_store(environ), selector)
        store, implied = store_from_text(store_text)
        return Locator(store, selector or implied)
    if is_uri(locator):
        store, implied = store_from_text(locator)
        return Locator(store, implied)
    if locator and os.path.exists(os.path.expanduser(locator)):
        store, implied = store_from_path(locator)
        return Locator(store, implied)
    return Locator(default_store(environ), locator)
