"""The MLflow adapter's hooks: file stores (`mlruns/`), sqlite databases and tracking servers.

Address grammar: docs/adapters/mlflow.md. File stores and sqlite databases are read directly
(no mlflow package); tracking servers go through the MLflow client (`rundiff[mlflow]`).
"""

from __future__ import annotations

import os

from rundiff_core import AdapterSpec, OptionSpec, adapters_hook, hookimpl

# Every start imports this module to register the adapter: the store rules of `layout` and the
# claim classes are imported inside the hooks that use them.
NAME = "mlflow"


rundiff_register_adapters = adapters_hook(AdapterSpec(
    name=NAME, schemes=("mlflow",), priority=20,
    source="rundiff_adapters.mlflow.source:MlflowSource",
    requires=("mlflow",), install_hint="pip install 'rundiff[mlflow]'",
    summary="MLflow file stores (mlruns/), sqlite databases and tracking servers "
    "(file and sqlite stores read without the mlflow package)",
    options=(OptionSpec("--tracking-uri", "MLFLOW_TRACKING_URI", metavar="URI",
                        help="MLflow tracking URI for mlflow: addresses without a store"),),
))


@hookimpl
def rundiff_sniff_path(path):
    from rundiff_core import Claim

    from .layout import find_store

    found = find_store(path)
    if found is None:
        return None
    locator = found.store + (f"#{found.selector}" if found.selector else "")
    return Claim(NAME, found.reason, locator=locator)


@hookimpl
def rundiff_parse_address(raw):
    # `sqlite:///mlflow.db` given bare: ours when the file is an MLflow database
    if raw.lower().startswith("sqlite:"):
        from rundiff_core import Address, RundiffError

        from .address import sqlite_path
        from .layout import is_mlflow_sqlite

        try:
            path = sqlite_path(raw.split("#", 1)[0])
        except RundiffError:
            return None
        if is_mlflow_sqlite(path):
            return Address(f"{NAME}:{raw}", NAME, raw)
    return None


@hookimpl
def rundiff_detect_project(cwd, environ):
    from rundiff_core import ProjectClaim

    from .layout import DEFAULT_DB, DEFAULT_DIR, is_file_store, is_mlflow_sqlite

    uri = (environ.get("MLFLOW_TRACKING_URI") or "").strip()
    if uri:
        from .address import is_uri

        local = uri.lower().startswith(("sqlite:", "file:")) or not is_uri(uri)
        return ProjectClaim(
            NAME,
            f"MLFLOW_TRACKING_URI is set ({'local store' if local else 'tracking server'})",
            # a server may hold thousands of runs: only local stores become the default address
            address=f"{NAME}:{uri}#" if local else None,
        )
    if is_file_store(os.path.join(cwd, DEFAULT_DIR)):
        return ProjectClaim(NAME, f"{DEFAULT_DIR}/ is an MLflow file store",
                            address=f"{NAME}:{os.path.join(cwd, DEFAULT_DIR)}")
    if is_mlflow_sqlite(os.path.join(cwd, DEFAULT_DB)):
        return ProjectClaim(NAME, f"{DEFAULT_DB} is an MLflow database",
                            address=f"{NAME}:{os.path.join(cwd, DEFAULT_DB)}")
    return None
