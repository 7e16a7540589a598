"""The spike rule's rolling median and block spread take fast paths (partition, plain median) on
windows without NaN: they must give exactly what `nanmedian` gives, NaN and edges included."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

from rundiff_core.engines.stats import _block_spread, _rolling_median


def _median_by_nanmedian(v: np.ndarray, w: int) -> np.ndarray:
    h = w // 2
    pad = np.concatenate([np.full(h, np.nan), v, np.full(h, np.nan)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmedian(sliding_window_view(pad, w), axis=1)


def _spread_by_nanmedian(r: np.ndarray, block: int) -> np.ndarray:
    n = len(r)
    nb = -(-n // block)
    padded = np.full(nb * block, np.nan)
    padded[:n] = r
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mad = np.nanmedian(np.abs(padded.reshape(nb, block)), axis=1) * 1.4826
    return np.repeat(mad, block)[:n]


@pytest.mark.parametrize("seed", range(4))
def test_fast_paths_equal_nanmedian(seed):
    rng = np.random.default_rng(seed)
    for trial in range(60):
        n = int(rng.integers(1, 400))
        v = rng.normal(0, 1, n) * rng.choice([1e-6, 1.0, 1e6])
        if trial % 3 == 0:
            v[rng.random(n) < 0.15] = np.nan  # gaps
        if trial % 11 == 0:
            v[:] = np.nan
        w = int(rng.choice([5, 7, 11, 25]))
        assert np.array_equal(_rolling_median(v, w), _median_by_nanmedian(v, w), equal_nan=True)
        block = int(rng.choice([20, 44, 100]))
        assert np.array_equal(_block_spread(v, block), _spread_by_nanmedian(v, block),
                              equal_nan=True)
