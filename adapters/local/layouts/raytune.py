"""(being written) the raytune layout."""

from __future__ import annotations

import rundiff_core
from rundiff_core import Claimed, LayoutFolder, LayoutMeta, LayoutRun


def claim(folder: LayoutFolder) -> Claimed | None:
    return None


def meta(run: LayoutRun) -> LayoutMeta:
    return LayoutMeta()


def history(run: LayoutRun):  # noqa: ANN201
    return rundiff_core.empty_history(), []
