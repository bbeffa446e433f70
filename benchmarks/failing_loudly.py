"""Output-shift detection (BBSD) against Rabanser, Günnemann & Lipton 2019, "Failing Loudly".

A small replication on scikit-learn's bundled ``load_digits`` (8 x 8 images, 1,797 rows; no
download). The shifts are SYNTHETIC, in the spirit of the paper's: Gaussian noise on the
pixels, affine transforms (rotation, zoom, translation) and knock-out (label shift: a share of
one class removed), each at small / medium / large strength applied to 10 %, 50 % or 100 % of
the target rows. The model is a multinomial logistic regression trained on 700 images; the
source set is 500 held-out images; target samples of size n come from the other 597
(without replacement, so n <= 500 here). ``--augment`` reaches n = 1,000 and 2,000: both
pools are drawn i.i.d. from all 1,097 held-out images and given the same mild random jitter (+-0.5 px
translation, pixel noise sd 0.02), so source and target still share one distribution under
no shift (SYNTHETIC augmentation). What is run is the product's own
:class:`detectors.OutputShiftDetector` **with its default settings** on the softmax outputs.

The paper's best method (BBSDs: univariate KS on each softmax output, Bonferroni, no floor)
is run beside it on the same draws as the reference, together with the paper's aggregate
numbers (0.47 at n = 50 to 0.70 at n = 1000, over its own image
datasets).

    python benchmarks/failing_loudly.py [--runs 5] [--quick]
"""
from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("DO_NOT_TRACK", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SIZES = (10, 20, 50, 100, 200, 500)
STRENGTHS = {"small": 0, "medium": 1, "large": 2}
FRACTIONS = (0.1, 0.5, 1.0)


def data(seed: int = 0):
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression

    digits = load_digits()
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(digits.target))
    x, y = digits.images[order] / 16.0, digits.target[order]
    train, source, target = order[:700], slice(700, 1200), slice(1200, None)
    model = LogisticRegression(max_iter=2000).fit(x[:700].reshape(700, -1), y[:700])
    del train
    return model, (x[source], y[source]), (x[target], y[target])


def jitter(images: np.ndarray, rng) -> np.ndarray:
    """``images`` with a mild random jitter (the same recipe for source and target, so the null
    of "no shift" still holds)."""
    from scipy import ndimage

    out = np.empty_like(images)
    for i, img in enumerate(images):
        out[i] = ndimage.shift(img, rng.uniform(-0.5, 0.5, 2), order=1)
    return np.clip(out + rng.normal(0, 0.02, out.shape), 0, 1)


def shift(kind: str, strength: int, fraction: float, images: np.ndarray, labels: np.ndarray, rng):
    """Apply a SYNTHETIC shift to a copy of ``images`` (values in [0, 1])."""
    from scipy import ndimage

    images, labels = images.copy(), labels.copy()
    chosen = rng.random(len(images)) < fraction
    if kind == "noise":
        sd = (0.05, 0.3, 1.0)[strength]
        images[chosen] = np.clip(images[chosen] + rng.normal(0, sd, images[chosen].shape), 0, 1)
    elif kind == "affine":
        angle, zoom, move = ((10, 0.1, 0.5), (40, 0.2, 1.0), (90, 0.4, 2.0))[strength]
        for i in np.flatnonzero(chosen):
            img = ndimage.rotate(images[i], rng.uniform(-angle, angle), reshape=False, order=1)
            img = ndimage.shift(img, rng.uniform(-move, move, 2), order=1)
            z = 1 + rng.uniform(-zoom, zoom)
            img = ndimage.affine_transform(img, np.eye(2) / z, offset=3.5 - 3.5 / z, order=1)
            images[i] = np.clip(img, 0, 1)
    elif kind == "knockout":  # label shift: drop a share of class 0 (strength: 10 / 50 / 100 %)
        drop = (0.1, 0.5, 1.0)[strength]
        keep = ~((labels == 0) & (rng.random(len(labels)) < drop))
        images, labels = images[keep], labels[keep]
    return images, labels


def bbsds_paper(source_p: np.ndarray, target_p: np.ndarray, alpha: float = 0.05) -> bool:
    """The paper's best: KS on each softmax output, Bonferroni over outputs, no effect floor."""
    from scipy import stats

    p = [stats.ks_2samp(source_p[:, k], target_p[:, k]).pvalue for k in range(source_p.shape[1])]
    return min(p) < alpha / source_p.shape[1]


def product(source_p: np.ndarray, target_p: np.ndarray, classes) -> bool:
    from detectors import OutputShiftDetector

    return OutputShiftDetector(classes=classes).fit(source_p).test(target_p).is_shift


def run(runs: int, sizes=SIZES, kinds=("noise", "affine", "knockout"), augment: bool = False) -> dict:
    model, (xs, ys), (xt, yt) = data()
    if augment:
        rng0 = np.random.default_rng(2)
        # both drawn i.i.d. from one base pool (all held-out images): an exact null
        base_x, base_y = np.concatenate([xs, xt]), np.concatenate([ys, yt])
        idx_s, idx_t = rng0.integers(0, len(base_x), 2000), rng0.integers(0, len(base_x), 4000)
        xs, ys = jitter(base_x[idx_s], rng0), base_y[idx_s]
        xt, yt = jitter(base_x[idx_t], rng0), base_y[idx_t]
    classes = [str(c) for c in model.classes_]
    ps = model.predict_proba(xs.reshape(len(xs), -1))
    table = {n: {"product": [], "paper_method": [], "null_product": [], "null_paper": []} for n in sizes}
    rng = np.random.default_rng(1)
    for kind, strength, fraction in itertools.product(kinds, STRENGTHS.values(), FRACTIONS):
        for r in range(runs):
            images, labels = shift(kind, strength, fraction, xt, yt, rng)
            pt_all = model.predict_proba(images.reshape(len(images), -1))
            for n in sizes:
                if n > len(pt_all):
                    continue
                pt = pt_all[rng.choice(len(pt_all), n, replace=False)]
                table[n]["product"].append(product(ps, pt, classes))
                table[n]["paper_method"].append(bbsds_paper(ps, pt))
    null_runs = max(100, 80 * runs)  # enough to tell alpha from 2 alpha at runs = 5
    p_null = model.predict_proba(xt.reshape(len(xt), -1))
    for n in sizes:
        for _ in range(null_runs):
            pt = p_null[rng.choice(len(p_null), n, replace=False)]
            table[n]["null_product"].append(product(ps, pt, classes))
            table[n]["null_paper"].append(bbsds_paper(ps, pt))
    return {n: {k: float(np.mean(v)) if v else float("nan") for k, v in row.items()} | {"shifts": len(row["product"])}
            for n, row in table.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--augment", action="store_true", help="larger jittered pools: n up to 2,000")
    args = parser.parse_args()
    started = time.time()
    sizes = (50, 200) if args.quick else SIZES + ((1000, 2000) if args.augment else ())
    result = run(1 if args.quick else args.runs, sizes, augment=args.augment)
    print("| n | contextshift (default) | BBSDs KS+Bonferroni, same draws | false alarms contextshift | "
          "false alarms BBSDs |")
    print("|---|---|---|---|---|")
    for n, row in result.items():
        print(f"| {n} | {row['product']:.2f} | {row['paper_method']:.2f} | {row['null_product']:.3f} | "
              f"{row['null_paper']:.3f} |")
    print(f"\n{time.time() - started:.0f} s")


if __name__ == "__main__":
    main()
