"""SYNTHETIC example data for the built-in domains, with known planted context shifts.

Nothing here is real data: rows are simulated on realistic metadata so that audits, demos
and tests have a ground truth. Every frame carries ``df.attrs["synthetic"] = True`` and a
description of what was planted (``df.attrs["planted"]``, text; details in :data:`PLANTED`).

Columns follow the column naming conventions: ``id``, ``label``, ``prediction``,
``score`` (binary positive-class probability) or ``proba_<class>`` (multiclass), the pack's
context columns, a few ``feature`` columns and ``emb_0 … emb_{k-1}`` embeddings.

``shift="planted"`` plants three things in production (the benchmark never has them):

* a **weak slice** named by an expert slice of the pack: the model is ~20 points less
  accurate there in both datasets, and the context is 3 % of the benchmark but 15 % of
  production (so the benchmark hides the weakness);
* an **untested context**: a context value present in production (about 8-10 %) and absent
  from the benchmark (a new deepfake generator, a new clinic, CCTV footage);
* a **hidden weak slice**: a conjunction of two context conditions, named by no expert
  slice, where the model is ~30 points less accurate (same share on both sides).

``shift="none"`` draws both datasets from the benchmark distribution.

>>> bench, prod = make_example("dermatology", n_benchmark=500, n_production=500, random_state=1)
>>> bench.attrs["synthetic"], bench.shape[0], "score" in prod.columns
(True, 500, True)
>>> PLANTED["dermatology"].weak_slice
'fitzpatrick_v_vi'
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from domains.loader import BUILTIN_ALIASES, builtin_name
from slicelang import all_of, equals

__all__ = ["PlantedShift", "PLANTED", "EXAMPLE_DOMAINS", "make_example"]

WEAK_SHARE_BENCHMARK, WEAK_SHARE_PRODUCTION = 0.03, 0.15
WEAK_DROP, HIDDEN_DROP, UNTESTED_DROP = 0.20, 0.30, 0.15


@dataclass(frozen=True)
class PlantedShift:
    """What ``shift="planted"`` puts into the production data of one domain."""

    domain: str
    weak_slice: str  # expert slice of the pack
    weak_expression: str
    weak_drop: float  # accuracy points lost inside the weak slice
    weak_share_benchmark: float
    weak_share_production: float
    untested_column: str
    untested_value: str
    untested_share_production: float
    hidden_conditions: tuple[tuple[str, str], ...]  # (column, value) pairs, equality
    hidden_drop: float

    @property
    def hidden_expression(self) -> str:
        return all_of(equals(c, v) for c, v in self.hidden_conditions)

    def describe(self) -> str:
        return (f"SYNTHETIC planted shift: weak slice {self.weak_slice} ({self.weak_expression}, "
                f"-{self.weak_drop:.0%} accuracy, {self.weak_share_benchmark:.0%} of benchmark, "
                f"{self.weak_share_production:.0%} of production); untested context "
                f"{equals(self.untested_column, self.untested_value)} ({self.untested_share_production:.0%} of "
                f"production, absent from benchmark); hidden weak slice {self.hidden_expression} "
                f"(-{self.hidden_drop:.0%} accuracy)")


PLANTED = {
    "facial_expression": PlantedShift(
        "facial_expression", "non_frontal", "abs(head_pose_yaw) > 30", WEAK_DROP,
        WEAK_SHARE_BENCHMARK, WEAK_SHARE_PRODUCTION, "image_source", "cctv", 0.08,
        (("occlusion", "mask"), ("age_group", "older_adult")), HIDDEN_DROP),
    "deepfake": PlantedShift(
        "deepfake", "heavy_compression", 'compression == "heavy"', WEAK_DROP,
        WEAK_SHARE_BENCHMARK, WEAK_SHARE_PRODUCTION, "generator", "diffusion", 0.08,
        (("lighting", "dim"), ("content", "vlog")), HIDDEN_DROP),
    "dermatology": PlantedShift(
        "dermatology", "fitzpatrick_v_vi", "fitzpatrick in [5, 6]", WEAK_DROP,
        WEAK_SHARE_BENCHMARK, WEAK_SHARE_PRODUCTION, "clinical_site", "site_e", 0.10,
        (("body_site", "head_neck"), ("image_quality", "fair")), HIDDEN_DROP),
}
EXAMPLE_DOMAINS = tuple(PLANTED)
PLANTED.update({alias: PLANTED[name] for alias, name in BUILTIN_ALIASES.items()})  # "medical" still works


def _choice(rng, values, probs, n) -> np.ndarray:
    p = np.asarray(probs, dtype=float)
    return np.asarray(values, dtype=object)[rng.choice(len(values), size=n, p=p / p.sum())]


def _with_new_value(values, probs, new_value, share):
    """Add ``new_value`` with ``share`` of the mass, scaling the others down."""
    return [*values, new_value], [*(np.asarray(probs) * (1 - share)), share]


# ------------------------------------------------------------------ per-domain contexts
# Each returns (context frame, weak mask); `planted` says whether this is planted production.

def _facial_expression(rng, n: int, planted: bool, plant: PlantedShift):
    weak = rng.random(n) < (plant.weak_share_production if planted else plant.weak_share_benchmark)
    yaw = np.where(weak, rng.uniform(31, 80, n), np.clip(np.abs(rng.normal(0, 12, n)), 0, 29.9))
    sources, probs = ["lab_dataset", "web", "movie", "webcam", "smartphone"], [.3, .35, .15, .1, .1]
    if planted:
        sources, probs = _with_new_value(sources, probs, "cctv", plant.untested_share_production)
    ctx = pd.DataFrame({
        "head_pose_yaw": np.round(yaw * rng.choice([-1, 1], n), 1),
        "head_pose_pitch": np.round(np.clip(rng.normal(0, 10, n), -60, 60), 1),
        "illumination": _choice(rng, ["normal", "dim", "backlit", "overexposed"], [.8, .1, .05, .05], n),
        "occlusion": _choice(rng, ["none", "glasses", "sunglasses", "mask", "hand", "hair"],
                             [.5, .12, .05, .2, .08, .05], n),
        "age_group": _choice(rng, ["child", "adolescent", "adult", "older_adult"], [.08, .1, .57, .25], n),
        "gender": _choice(rng, ["female", "male", "unknown"], [.48, .48, .04], n),
        "skin_tone": _choice(rng, [1, 2, 3, 4, 5, 6], [.15, .25, .25, .15, .12, .08], n).astype(int),
        "expression_type": _choice(rng, ["posed", "spontaneous"], [.4, .6], n),
        "capture": _choice(rng, ["lab", "in_the_wild"], [.3, .7], n),
        "face_size": np.round(np.clip(rng.lognormal(np.log(120), 0.5, n), 8, 2048)).astype(int),
        "image_source": _choice(rng, sources, probs, n),
    })
    return ctx, weak


_GENERATOR_METHOD = {"deepfakes": "face_swap", "faceswap": "face_swap", "faceshifter": "face_swap",
                     "face2face": "face_reenactment", "neuraltextures": "face_reenactment",
                     "stylegan2": "entire_face_synthesis", "diffusion": "entire_face_synthesis"}


def _deepfake(rng, n: int, planted: bool, plant: PlantedShift):
    weak = rng.random(n) < (plant.weak_share_production if planted else plant.weak_share_benchmark)
    fake = rng.random(n) < 0.5
    gens, probs = ["deepfakes", "faceswap", "face2face", "neuraltextures", "faceshifter", "stylegan2"], \
        [.25, .2, .2, .15, .1, .1]
    if planted:  # the untested share is of all rows; fakes are half of them
        gens, probs = _with_new_value(gens, probs, "diffusion", 2 * plant.untested_share_production)
    generator = np.where(fake, _choice(rng, gens, probs, n), "none").astype(object)
    ctx = pd.DataFrame({
        "manipulation_method": [_GENERATOR_METHOD.get(g, "none") for g in generator],
        "generator": generator,
        "compression": np.where(weak, "heavy", _choice(rng, ["raw", "light"], [.4, .6], n)).astype(object),
        "resolution": _choice(rng, [240, 360, 480, 720, 1080], [.05, .1, .2, .35, .3], n).astype(int),
        "platform": _choice(rng, ["none", "youtube", "tiktok", "instagram", "facebook", "whatsapp", "twitter"],
                            [.5, .2, .08, .08, .06, .04, .04], n),
        "face_size": np.round(np.clip(rng.lognormal(np.log(150), 0.6, n), 8, 2048)).astype(int),
        "num_faces": np.where(rng.random(n) < 0.85, 1, rng.integers(2, 6, n)).astype(int),
        "skin_tone": _choice(rng, [1, 2, 3, 4, 5, 6], [.15, .25, .25, .15, .12, .08], n).astype(int),
        "gender": _choice(rng, ["female", "male", "unknown"], [.45, .5, .05], n),
        "age_group": _choice(rng, ["child", "adult", "older_adult"], [.05, .8, .15], n),
        "lighting": _choice(rng, ["normal", "dim", "bright", "mixed"], [.6, .25, .1, .05], n),
        "content": _choice(rng, ["interview", "news", "vlog", "movie", "other"], [.25, .2, .25, .2, .1], n),
    })
    return ctx, weak, fake


_DEVICES = {"dermoscopic": (["dermlite_dl4", "heine_delta30", "fotofinder"], [.5, .3, .2]),
            "clinical": (["dslr", "other"], [.9, .1]), "smartphone": (["iphone", "android"], [.55, .45])}


_ITA_GROUPS = ("very_light", "light", "intermediate", "tan", "brown", "dark")


def _dermatology(rng, n: int, planted: bool, plant: PlantedShift):
    weak = rng.random(n) < (plant.weak_share_production if planted else plant.weak_share_benchmark)
    fitz = np.where(weak, _choice(rng, [5, 6], [.6, .4], n), _choice(rng, [1, 2, 3, 4], [.2, .35, .3, .15], n))
    modality = _choice(rng, ["dermoscopic", "clinical", "smartphone"], [.6, .3, .1], n)
    device = np.empty(n, dtype=object)
    for m, (names, probs) in _DEVICES.items():
        rows = modality == m
        device[rows] = _choice(rng, names, probs, int(rows.sum()))
    sites, probs = ["site_a", "site_b", "site_c", "site_d"], [.3, .3, .25, .15]
    if planted:
        sites, probs = _with_new_value(sites, probs, "site_e", plant.untested_share_production)
    ctx = pd.DataFrame({
        "fitzpatrick": fitz.astype(int),
        "body_site": _choice(rng, ["head_neck", "trunk", "upper_extremity", "lower_extremity", "acral",
                                   "oral_genital", "nail"], [.2, .35, .15, .18, .06, .03, .03], n),
        "modality": modality,
        "device": device,
        "clinical_site": _choice(rng, sites, probs, n),
        "age": np.round(np.clip(rng.normal(55, 18, n), 2, 95)).astype(int),
        "sex": _choice(rng, ["female", "male"], [.5, .5], n),
        "image_quality": _choice(rng, ["good", "fair", "poor"], [.7, .22, .08], n),
        "skin_markings": rng.random(n) < 0.08,
        "ruler": rng.random(n) < 0.15,
    })
    # the photo's ITA group: the group typical of the recorded type, one group off in a quarter of
    # the rows; drawn from its own generator so the columns above keep their seeded values
    side_rng = np.random.default_rng([n, int(fitz.sum())])
    group = np.clip(fitz.astype(int) - 1 + np.where(side_rng.random(n) < 0.25, side_rng.choice([-1, 1], n), 0), 0, 5)
    ctx["skin_tone"] = np.asarray(_ITA_GROUPS, dtype=object)[group]
    return ctx, weak


# ------------------------------------------------------------------ outcomes

def _p_correct(base: np.ndarray, ctx: pd.DataFrame, weak: np.ndarray, plant: PlantedShift) -> np.ndarray:
    """Planted weaknesses do not add up: a row loses the largest drop that applies to it."""
    hidden = np.logical_and.reduce([ctx[c].to_numpy() == v for c, v in plant.hidden_conditions])
    untested = ctx[plant.untested_column].to_numpy() == plant.untested_value
    drop = np.maximum.reduce([weak * plant.weak_drop, hidden * plant.hidden_drop, untested * UNTESTED_DROP])
    return np.clip(base - drop, 0.05, 0.99)


def _margins(rng, correct: np.ndarray) -> np.ndarray:
    """Confidence margins: correct predictions are more confident on average."""
    return np.where(correct, np.abs(rng.normal(2.2, 0.8, correct.size)),
                    np.abs(rng.normal(0.7, 0.5, correct.size))) + 0.02


def _binary_outcomes(rng, classes, y_pos: np.ndarray, p_correct: np.ndarray) -> dict:
    correct = rng.random(y_pos.size) < p_correct
    pred_pos = np.where(correct, y_pos, ~y_pos)
    logit = np.where(pred_pos, 1, -1) * _margins(rng, correct)
    neg, pos = classes
    return {"label": np.where(y_pos, pos, neg), "prediction": np.where(pred_pos, pos, neg),
            "score": np.round(1 / (1 + np.exp(-logit)), 4)}


def _multiclass_outcomes(rng, classes, priors, p_correct: np.ndarray) -> dict:
    n, k = p_correct.size, len(classes)
    y = rng.choice(k, size=n, p=np.asarray(priors) / np.sum(priors))
    correct = rng.random(n) < p_correct
    wrong = (y + rng.integers(1, k, n)) % k  # uniform over the other classes
    pred = np.where(correct, y, wrong)
    logits = rng.normal(0, 1, (n, k))
    others = np.where(np.arange(k) == pred[:, None], -np.inf, logits).max(axis=1)
    logits[np.arange(n), pred] = others + _margins(rng, correct)
    proba = np.exp(logits - logits.max(axis=1, keepdims=True))
    proba /= proba.sum(axis=1, keepdims=True)
    out = {"label": np.asarray(classes, dtype=object)[y], "prediction": np.asarray(classes, dtype=object)[pred]}
    out.update({f"proba_{c}": np.round(proba[:, j], 4) for j, c in enumerate(classes)})
    return out


def _embeddings(rng, ctx: pd.DataFrame, weak: np.ndarray, plant: PlantedShift, dim: int) -> dict:
    """Context-dependent embeddings: the untested context sits in a region of its own."""
    emb = rng.normal(0, 1, (len(ctx), dim))
    emb[:, 0] += 1.5 * weak
    untested = ctx[plant.untested_column].to_numpy() == plant.untested_value
    emb[:, 1 % dim] += 5.0 * untested
    emb[:, 2 % dim] += 5.0 * untested
    hidden_first = ctx[plant.hidden_conditions[0][0]].to_numpy() == plant.hidden_conditions[0][1]
    emb[:, 3 % dim] += 0.8 * hidden_first
    return {f"emb_{j}": np.round(emb[:, j], 4) for j in range(dim)}


def _features(rng, domain: str, ctx: pd.DataFrame) -> dict:
    n = len(ctx)
    if domain == "facial_expression":
        dark = ctx["illumination"].isin(["dim", "backlit"]).to_numpy()
        return {"brightness": np.round(np.clip(rng.normal(0.55 - 0.25 * dark, 0.1), 0, 1), 3),
                "sharpness": np.round(np.log(ctx["face_size"].to_numpy()) + rng.normal(0, 0.3, n), 3),
                "landmark_confidence": np.round(np.clip(rng.beta(8, 2, n), 0, 1), 3)}
    if domain == "deepfake":
        heavy = (ctx["compression"] == "heavy").to_numpy()
        return {"bitrate_kbps": np.round(rng.lognormal(np.log(2500) - 1.2 * heavy, 0.4)),
                "blur": np.round(rng.gamma(2, 0.5, n) + heavy, 3),
                "duration_s": np.round(rng.lognormal(np.log(20), 0.7, n), 1)}
    return {"lesion_diameter_mm": np.round(rng.lognormal(np.log(6), 0.4, n), 1),
            "image_brightness": np.round(np.clip(rng.normal(0.6 - 0.05 * ctx["fitzpatrick"].to_numpy(), 0.08),
                                                 0, 1), 3),
            "blur_score": np.round(rng.gamma(2, 0.3, n) + (ctx["image_quality"] == "poor").to_numpy(), 3)}


_CLASSES = {
    "facial_expression": (("anger", "disgust", "fear", "happiness", "sadness", "surprise", "neutral"),
                          (.1, .05, .06, .3, .12, .12, .25)),
    "deepfake": (("real", "fake"), None),
    "dermatology": (("benign", "malignant"), None),
}
_CONTEXTS: dict[str, Callable] = {"facial_expression": _facial_expression, "deepfake": _deepfake,
                                  "dermatology": _dermatology}


def _one_side(rng, domain: str, n: int, planted: bool, n_embedding: int, prefix: str) -> pd.DataFrame:
    plant = PLANTED[domain]
    classes, priors = _CLASSES[domain]
    if domain == "deepfake":
        ctx, weak, fake = _deepfake(rng, n, planted, plant)
        outcome = _binary_outcomes(rng, classes, fake, _p_correct(np.full(n, 0.9), ctx, weak, plant))
    elif domain == "dermatology":
        ctx, weak = _dermatology(rng, n, planted, plant)
        malignant = rng.random(n) < 0.3
        base = np.where(malignant, 0.86, 0.9)
        outcome = _binary_outcomes(rng, classes, malignant, _p_correct(base, ctx, weak, plant))
    else:
        ctx, weak = _facial_expression(rng, n, planted, plant)
        outcome = _multiclass_outcomes(rng, classes, priors, _p_correct(np.full(n, 0.88), ctx, weak, plant))
    columns = {"id": [f"{prefix}{i:06d}" for i in range(n)], **outcome}
    frame = pd.concat([pd.DataFrame(columns), ctx, pd.DataFrame(_features(rng, domain, ctx))], axis=1)
    if n_embedding:
        frame = pd.concat([frame, pd.DataFrame(_embeddings(rng, ctx, weak, plant, n_embedding))], axis=1)
    return frame


def make_example(domain: str, *, n_benchmark: int = 2000, n_production: int = 2000,
                 shift: str = "planted", n_embedding: int = 8, random_state: int | None = 0
                 ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """SYNTHETIC (benchmark, production) frames for ``domain`` with known planted shifts.

    Parameters
    ----------
    domain : one of ``EXAMPLE_DOMAINS`` (``facial_expression``, ``deepfake``, ``dermatology``), or an
        alias of one (``medical``)
    n_benchmark, n_production : rows of each frame
    shift : ``"planted"`` (see module docstring and :data:`PLANTED`) or ``"none"``
    n_embedding : number of ``emb_*`` columns (0 for none)
    random_state : seed; the same seed gives the same frames

    Returns
    -------
    benchmark, production : DataFrames of shape ``(n_benchmark, m)`` and ``(n_production, m)``
        with ``attrs["synthetic"] = True``, ``attrs["domain"]`` and ``attrs["planted"]``.
    """
    domain = builtin_name(domain)
    if domain not in PLANTED:
        raise ValueError(f"no example generator for domain {domain!r}; choose one of {list(EXAMPLE_DOMAINS)}")
    if shift not in ("planted", "none"):
        raise ValueError(f"shift must be 'planted' or 'none', got {shift!r}")
    if n_benchmark < 1 or n_production < 1:
        raise ValueError("n_benchmark and n_production must be positive")
    rng = np.random.default_rng(random_state)
    bench = _one_side(rng, domain, n_benchmark, False, n_embedding, "b")
    prod = _one_side(rng, domain, n_production, shift == "planted", n_embedding, "p")
    for frame, role in ((bench, "benchmark"), (prod, "production")):
        # flat attrs: pandas deep-copies attrs on every operation
        frame.attrs.update({"synthetic": True, "domain": domain, "role": role, "shift": shift,
                            "planted": PLANTED[domain].describe() if shift == "planted" else None})
    return bench, prod
