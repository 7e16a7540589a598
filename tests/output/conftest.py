"""Fixtures for the output-discipline tests: wide W&B runs, a noisy sweep with an empty run."""

from __future__ import annotations

import pytest

from .writers import write_sweep, write_wide_wandb


@pytest.fixture(scope="session")
def wide(tmp_path_factory):
    """(root, {hidden: run folder}) for two 255-key W&B offline runs (written once per session)."""
    root = tmp_path_factory.mktemp("wide")
    return root, write_wide_wandb(root)


@pytest.fixture
def sweep(tmp_path):
    """A 3 × 3-seed noisy sweep, one planted 25× spike (lr-0.2/seed-0, step 150), one empty run."""
    return write_sweep(tmp_path / "sweep", spike=(1, 150))
