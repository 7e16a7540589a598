"""The public adapter surface: what adapters and contrib may import, and that it stays light.

Adapters (`adapters/`, installed as rundiff_adapters) and contrib packages import only
`rundiff_core` and `rundiff_core.testing`; an import-linter contract (pyproject.toml) enforces it
in `make test`, and the tests here prove the contract holds, that it fails on a planted
violation, that every contrib package is under it, and that the surface costs no heavy import.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import rundiff_core

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("pandas", "numpy", "pyarrow", "polars")
DEEP_IMPORT = re.compile(r"^\s*(?:from|import)\s+rundiff_core\.(?!testing\b)([\w.]+)", re.M)

pytest.importorskip("importlinter")


def _config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]


def _lint_imports(config: Path, env_path: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if env_path:
        env["PYTHONPATH"] = os.pathsep.join([*env_path, env.get("PYTHONPATH", "")])
    code = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    return subprocess.run([sys.executable, "-c", code, "--no-logo", "--no-cache", str(config)],
                          cwd=str(config.parent), env=env, capture_output=True, text=True, timeout=300)


def test_no_adapter_or_contrib_file_imports_below_rundiff_core():
    """The grep of the issue, over every file (tests too, which import-linter does not see)."""
    found = []
    for folder in ("adapters", "contrib"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for m in DEEP_IMPORT.finditer(path.read_text()):
                found.append(f"{path.relative_to(ROOT)}: rundiff_core.{m.group(1)}")
    assert not found, "import these from rundiff_core instead:\n" + "\n".join(found)


def test_import_contracts_hold():
    result = _lint_imports(ROOT / "pyproject.toml")
    assert result.returncode == 0, result.stdout + result.stderr
    n = len(_config()["contracts"])
    assert n >= 3 and f"{n} kept, 0 broken" in result.stdout


def test_public_surface_contract_fails_on_a_planted_violation(tmp_path):
    """A stand-in rundiff_adapters with one legal and one illegal module: the contract must name
    the illegal import and only it, so the rule cannot rot into a no-op."""
    pkg = tmp_path / "plant" / "rundiff_adapters"
    (pkg / "ok").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "ok" / "__init__.py").write_text(
        "from rundiff_core import Run, hookimpl, walk_dirs\nfrom rundiff_core.testing import memory_run\n")
    (pkg / "bad.py").write_text("from rundiff_core.model import Run\n")
    config = tmp_path / "pyproject.toml"
    config.write_text((ROOT / "pyproject.toml").read_text())
    result = _lint_imports(config, [str(tmp_path / "plant")])
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    assert "rundiff_adapters.bad -> rundiff_core.model" in out
    assert "rundiff_adapters.ok" not in out
    assert f"{len(_config()['contracts']) - 1} kept, 1 broken" in out


def test_cycle_contract_fails_on_a_planted_loop(tmp_path):
    """Two stand-in adapter modules that import each other (one inside a function, which counts
    too): the no-import-cycles contract must name the loop."""
    pkg = tmp_path / "plant" / "rundiff_adapters"
    (pkg / "loop").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "loop" / "__init__.py").write_text("")
    (pkg / "loop" / "a.py").write_text("from rundiff_core import Run\nfrom . import b\n")
    (pkg / "loop" / "b.py").write_text("def later():\n    from . import a\n    return a\n")
    config = tmp_path / "pyproject.toml"
    config.write_text((ROOT / "pyproject.toml").read_text())
    result = _lint_imports(config, [str(tmp_path / "plant")])
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    assert "No cycles are allowed in rundiff_adapters.loop" in out
    assert f"{len(_config()['contracts']) - 1} kept, 1 broken" in out


def test_upward_import_contract_fails_on_a_planted_import(tmp_path):
    """A copy of rundiff_core with one module importing the rundiff package (inside a function,
    which counts too): the no-upward-import contract must name it, and only it must break."""
    import shutil

    core = tmp_path / "plant" / "rundiff_core"
    shutil.copytree(ROOT / "rundiff_core", core, ignore=shutil.ignore_patterns("__pycache__"))
    (core / "planted.py").write_text("def later():\n    from rundiff.agents import server\n"
                                     "    return server\n")
    assert "rundiff_core.planted -> rundiff.agents" in _one_contract_broken(tmp_path)


def _one_contract_broken(tmp_path: Path) -> str:
    """lint-imports over the packages planted in tmp_path/plant: its output, once it is sure that
    exactly one contract broke."""
    config = tmp_path / "pyproject.toml"
    config.write_text((ROOT / "pyproject.toml").read_text())
    result = _lint_imports(config, [str(tmp_path / "plant")])
    out = result.stdout + result.stderr
    assert result.returncode != 0 and f"{len(_config()['contracts']) - 1} kept, 1 broken" in out, out
    return out


def test_every_contrib_package_is_under_the_contract():
    config = _config()
    contract = next(c for c in config["contracts"] if c["id"] == "public-surface")
    for pkg in sorted(ROOT.glob("contrib/*/*/__init__.py")):
        name = pkg.parent.name
        if name == "tests":
            continue
        assert name in config["root_packages"] and name in contract["source_modules"], name
    assert "rundiff_adapters" in contract["source_modules"]


def test_exports_are_listed_three_times_alike():
    """`_EXPORTS`/`_MODULES` (what loads lazily), `__all__` (what is public) and the
    TYPE_CHECKING block (what checkers see) name the same things."""
    lazy = set(rundiff_core._EXPORTS) | set(rundiff_core._MODULES)
    assert lazy | {"__version__"} == set(rundiff_core.__all__)
    text = Path(rundiff_core.__file__).read_text()
    block = text[text.index("if TYPE_CHECKING:"):]
    typed = set(re.findall(r"\b([A-Za-z_][A-Za-z0-9_]*)\b(?=,|\n|\))", block.split("\n", 1)[1]))
    assert lazy <= typed, sorted(lazy - typed)
    for name in lazy:
        assert getattr(rundiff_core, name) is not None


def test_the_core_and_every_plugin_module_import_nothing_heavy():
    plugins = sorted(p.parent.name for p in (ROOT / "adapters").glob("*/__init__.py"))
    contrib = sorted(p.parent.name for p in ROOT.glob("contrib/*/*/__init__.py") if p.parent.name != "tests")
    modules = ["rundiff_core", *(f"rundiff_adapters.{p}" for p in plugins), *contrib]
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        "import rundiff_core\n"
        "rundiff_core.walk_dirs, rundiff_core.hookimpl, rundiff_core.AdapterSpec, rundiff_core.Claim\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", f"heavy imports: {out.stdout.strip()} (loaded {modules})"
    assert len(plugins) >= 8


def test_no_export_shares_a_submodule_name():
    """Importing `rundiff_core.X` sets the package attribute X to the module, so an export named
    like a submodule would turn into that module as soon as anything imported it."""
    import pkgutil

    submodules = {m.name for m in pkgutil.iter_modules(rundiff_core.__path__)}
    assert not set(rundiff_core.__all__) & submodules
