"""Compression forensics: how coarse the JPEG tables are, whether they are an encoder's standard
ones, whether the image was compressed twice, and how blocky its pixels are.

* ``coarseness``: the geometric mean of the 64 luminance quantisation steps. It orders files by
  how much they discarded whatever encoder wrote them (the nearest IJG quality does not: a
  Photoshop-style "low" table read as q92, finer than a q90 file). ``quality`` is the IJG
  quality of the same coarseness, so it keeps that order and equals the saved quality for
  libjpeg/Pillow files.
* ``standard``: the luminance (and first chroma) table equals the IJG tables at some quality,
  as libjpeg, Pillow, OpenCV and most cameras' libraries write them; ``False`` for custom
  tables (Photoshop, some phones, re-encoders): a change of encoder.
* ``double``: the low-frequency DCT coefficients, divided by the file's steps, leave regularly
  EMPTY bins in their histogram (Lukas & Fridrich 2003): the image was quantised before with
  other steps, as when a q20 file is re-saved at q95 (then ``quality`` alone reads 95); or a
  finely saved file still shows a strong 8x8 grid (an earlier coarse compression).
* ``blockiness``: across the 8x8 grid, the mean luma step at the strongest grid phase over the
  median of the other phases (1 = no grid; JPEG at q20 about 1.3 or more). It needs native
  pixels (a resize hides the grid), is measured on at most a 1024 px central crop, and works on
  PNGs of once-JPEG images too.

>>> round(coarseness(tuple([16] * 64)), 1)
16.0
"""
from __future__ import annotations

import math

import numpy as np

from imagecontext.tables import ZIGZAG as _ZIGZAG, ijg_luminance_table

__all__ = ["coarseness", "quality_of_coarseness", "standard_tables", "blockiness", "double_compressed",
           "DOUBLE_EMPTY_SHARE", "DOUBLE_FINE_QUALITY", "DOUBLE_GRID"]

_IJG_CHROMA = np.array([
    17, 18, 24, 47, 99, 99, 99, 99, 18, 21, 26, 66, 99, 99, 99, 99,
    24, 26, 56, 99, 99, 99, 99, 99, 47, 66, 99, 99, 99, 99, 99, 99,
    *([99] * 32)], dtype=np.int64)
_LUMA_TABLES = np.stack([ijg_luminance_table(q) for q in range(1, 101)])
_COARSENESS = np.exp(np.log(_LUMA_TABLES).mean(axis=1))  # decreasing in quality
_BLOCK_CROP = 1024
# the share of empty histogram bins (among those a smooth histogram would fill) above which an
# image is called double-compressed: single JPEGs of the test photos read at most 0.19,
# q30 -> q90 re-saves 0.43..0.87, q20 -> q95 0.26..0.73 (those also show the grid, below)
DOUBLE_EMPTY_SHARE = 0.25
# a file saved finely (IJG-equivalent quality 80+) whose pixels still show a strong 8x8 grid
# was compressed coarsely before: q20 -> q95 re-saves read 1.5..2.1, single q90..q95 files
# at most 1.14
DOUBLE_FINE_QUALITY = 80
DOUBLE_GRID = 1.3
_DCT = np.array([[math.sqrt((1 if k == 0 else 2) / 8) * math.cos((2 * n + 1) * k * math.pi / 16)
                  for n in range(8)] for k in range(8)], dtype=np.float64)
_LOW_FREQUENCIES = ((0, 1), (1, 0), (1, 1), (0, 2), (2, 0))
# the 2-D DCT basis of those coefficients, (64, 5): one matrix product gives them for every block
_LOW_BASIS = np.stack([np.outer(_DCT[u], _DCT[v]).reshape(-1) for u, v in _LOW_FREQUENCIES], axis=1).astype(np.float32)
_DOUBLE_CROP = 512  # 4 096 blocks: enough counts for the histograms, a quarter of the cost of 1024


def _scaled_chroma(quality: int) -> np.ndarray:
    scale = 5000 // quality if quality < 50 else 200 - 2 * quality
    return np.clip((_IJG_CHROMA * scale + 50) // 100, 1, 255)


def coarseness(luminance_table: tuple[int, ...]) -> float:
    """Geometric mean of the luminance quantisation steps (order does not matter)."""
    table = np.asarray(luminance_table, dtype=np.float64)
    return float(np.exp(np.log(np.maximum(table, 1)).mean()))


def quality_of_coarseness(value: float) -> int:
    """The IJG quality (1..100) whose luminance table's coarseness is nearest ``value``."""
    return int(np.argmin(np.abs(np.log(_COARSENESS) - math.log(max(value, 1e-6))))) + 1


def standard_tables(tables: tuple[tuple[int, ...], ...]) -> bool:
    """Whether the luminance (and first chroma) table are IJG tables of one quality."""
    luma = np.asarray(tables[0], dtype=np.int64)
    candidates = [luma]
    unzig = np.empty(64, dtype=np.int64)
    unzig[_ZIGZAG] = luma
    candidates.append(unzig)
    for order, table in enumerate(candidates):
        matches = np.flatnonzero((_LUMA_TABLES == table).all(axis=1))
        for index in matches:
            if len(tables) < 2:
                return True
            chroma = np.asarray(tables[1], dtype=np.int64)
            if order == 1:
                un = np.empty(64, dtype=np.int64)
                un[_ZIGZAG] = chroma
                chroma = un
            if np.array_equal(chroma, _scaled_chroma(int(index) + 1)):
                return True
    return False


def _crop(luma: np.ndarray, side: int = _BLOCK_CROP) -> np.ndarray:
    """The central ``side`` x ``side`` crop of ``luma``, on the 8x8 grid of the file."""
    h, w = luma.shape
    y0 = max(0, (h - side) // 2) // 8 * 8
    x0 = max(0, (w - side) // 2) // 8 * 8
    return luma[y0:y0 + side, x0:x0 + side]


def blockiness(luma: np.ndarray) -> float:
    """Grid strength of ``luma`` (H, W) at native pixels: 1.0 without an 8x8 grid."""
    g = _crop(luma).astype(np.int16)
    if min(g.shape) < 32:
        return 1.0
    dx = np.abs(np.diff(g, axis=1)).mean(axis=0, dtype=np.float32)  # per column boundary
    dy = np.abs(np.diff(g, axis=0)).mean(axis=1, dtype=np.float32)
    phase_x = np.array([dx[k::8].mean() for k in range(8)])
    phase_y = np.array([dy[k::8].mean() for k in range(8)])
    phases = phase_x + phase_y
    return float(phases.max() / max(float(np.median(phases)), 1e-3))


def double_compressed(luma: np.ndarray, luminance_table: tuple[int, ...],
                      grid: float | None = None) -> tuple[bool, float]:
    """(double-compressed?, share of empty bins) of a JPEG's decoded ``luma`` (H, W) uint8,
    with its luminance table in natural order; ``grid``: its :func:`blockiness` if known."""
    natural = np.asarray(luminance_table, dtype=np.float64)  # Pillow gives natural order
    g = _crop(luma, _DOUBLE_CROP).astype(np.float32) - 128.0
    h, w = (g.shape[0] // 8) * 8, (g.shape[1] // 8) * 8
    if h < 64 or w < 64:
        return False, 0.0
    blocks = g[:h, :w].reshape(h // 8, 8, w // 8, 8).transpose(0, 2, 1, 3).reshape(-1, 64)
    # only the coefficients read below, (n_blocks, 5); einsum, not a BLAS product: BLAS threads
    # left spinning after it took 5x the CPU time of the whole extraction on a shared machine
    coefficients = np.einsum("bk,kc->bc", blocks, _LOW_BASIS)
    empty, expected = 0, 0
    for i, (u, v) in enumerate(_LOW_FREQUENCIES):
        step = natural.reshape(8, 8)[u, v]
        k = np.rint(coefficients[:, i] / step).astype(np.int64)
        k = np.abs(k[k != 0])
        if len(k) < 200:
            continue
        counts = np.bincount(k, minlength=3)[1:].astype(np.float64)
        # a bin is empty when it holds under a quarter of its fuller neighbour's count, which
        # itself holds enough (5+) to tell: a single quantisation's histogram decays smoothly
        neighbour = np.maximum(np.r_[counts[1:], 0.0], np.r_[0.0, counts[:-1]])
        judged = neighbour >= 5
        empty += int(((counts < 0.25 * neighbour) & judged).sum())
        expected += int(judged.sum())
    share = empty / expected if expected else 0.0
    fine = quality_of_coarseness(coarseness(luminance_table)) >= DOUBLE_FINE_QUALITY
    grid = blockiness(luma) if grid is None and fine else grid
    return bool(share >= DOUBLE_EMPTY_SHARE or (fine and grid is not None and grid >= DOUBLE_GRID)), float(share)
