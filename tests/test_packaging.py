"""Packaging checks: every adapter ships in the wheel, and loading plugins imports no tracker SDK.

An editable install maps `rundiff_adapters` to the `adapters/` folder wholesale, so a subpackage
missing from pyproject's hand-written `packages` list works in development and is silently absent
from the wheel users install. These tests build a real wheel (offline, no build isolation) from a
copy of the sources and look inside.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TRACKER_SDKS = ("wandb", "mlflow", "neptune", "neptune_scale", "tensorboard", "tensorflow",
                "inspect_ai", "torch", "tensorboardX", "tbparse")


def _packages_under(folder: Path, import_name: str) -> set[str]:
    """Dotted names of every package (a folder with __init__.py, or any .py file) below `folder`."""
    found = {import_name}
    for d, dirs, files in os.walk(folder):
        dirs[:] = [x for x in dirs if not x.startswith((".", "__pycache__"))]
        rel = Path(d).relative_to(folder)
        if rel.parts and any(f.endswith(".py") for f in files):
            found.add(".".join((import_name, *rel.parts)))
    return found


def _listed_packages() -> set[str]:
    with open(REPO / "pyproject.toml", "rb") as fh:
        return set(tomllib.load(fh)["tool"]["setuptools"]["packages"])


def test_pyproject_lists_every_adapter_subpackage():
    missing = _packages_under(REPO / "adapters", "rundiff_adapters") - _listed_packages()
    assert not missing, f"add to [tool.setuptools] packages in pyproject.toml: {sorted(missing)}"


def test_pyproject_lists_every_core_subpackage():
    missing = _packages_under(REPO / "rundiff_core", "rundiff_core") - _listed_packages()
    assert not missing, f"add to [tool.setuptools] packages in pyproject.toml: {sorted(missing)}"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    """A wheel built offline from a copy of the sources (the checkout is never written to)."""
    pytest.importorskip("setuptools", minversion="69")
    pytest.importorskip("wheel")
    src = tmp_path_factory.mktemp("src")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (REPO / name).exists():
            shutil.copy2(REPO / name, src / name)
    for name in ("rundiff", "rundiff_core", "adapters"):
        shutil.copytree(REPO / name, src / name, ignore=ignore)
    out = tmp_path_factory.mktemp("dist")
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--no-build-isolation",
         "-w", str(out), "-q"],
        capture_output=True, text=True, env=env, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    [built] = list(out.glob("rundiff-*.whl"))
    return zipfile.ZipFile(built)


def test_wheel_ships_every_adapter_as_rundiff_adapters(wheel):
    names = set(wheel.namelist())
    adapters = sorted(p.parent.name for p in (REPO / "adapters").glob("*/__init__.py"))
    assert adapters, "no adapters/*/ subpackages found"
    for adapter in adapters:
        for py in sorted((REPO / "adapters" / adapter).rglob("*.py")):
            rel = py.relative_to(REPO / "adapters").as_posix()
            if "__pycache__" not in rel:
                assert f"rundiff_adapters/{rel}" in names, f"wheel lacks rundiff_adapters/{rel}"
    assert not any(n.startswith("adapters/") for n in names), "a top-level 'adapters' would clash"


def test_wheel_ships_every_core_module(wheel):
    names = set(wheel.namelist())
    for py in sorted([*(REPO / "rundiff_core").rglob("*.py"), *(REPO / "rundiff").rglob("*.py")]):
        rel = py.relative_to(REPO).as_posix()
        if "__pycache__" not in rel:
            assert rel in names, f"wheel lacks {rel}"


def test_wheel_declares_the_console_script(wheel):
    [ep_file] = [n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt")]
    text = wheel.read(ep_file).decode()
    assert "[console_scripts]" in text and "rundiff = rundiff_core.cli:run" in text


_PROBE = """
import json, os, sys
from rundiff_core.plugins import Plugins
from rundiff_core.detect import collect_claims
plugins = Plugins()
rows = plugins.registry.describe()  # checks `requires` without importing them
for path in sys.argv[1:]:
    collect_claims(path, plugins)
sdks = {sdks!r}
print(json.dumps({{
    "plugins": sorted(plugins.info),
    "adapters": [r["name"] for r in rows],
    "errors": plugins.errors,
    "imported": sorted(m for m in sys.modules if m.split(".")[0] in sdks),
}}))
"""


def test_loading_every_plugin_imports_no_tracker_sdk(tmp_path):
    from rundiff_core.demo import write_journal_run

    run = write_journal_run(str(tmp_path / "run"), config={}, rows=[{"step": 0, "loss": 1.0}])
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUNDIFF_")}
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE.format(sdks=TRACKER_SDKS), run, str(tmp_path)],
        capture_output=True, text=True, env=env, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(proc.stdout)
    assert data["errors"] == []
    assert {"journal", "local"} <= set(data["plugins"])
    assert data["imported"] == [], f"loading plugins imported tracker SDKs: {data['imported']}"
