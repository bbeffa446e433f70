"""The audit's benchmark-side fits, through the optional :class:`ReferenceCache`, so that repeated runs are cheap.

What a detector fits on the benchmark depends on the benchmark's rows (content hash), the
columns and classes the audit resolved, the domain pack, the options that shape fitting, the
detector code and the library versions: together the audit's base key (:func:`for_audit`);
each fitted part adds its name and anything else it depends on.

``alpha`` is left out of the key on purpose: a monitor audits run *k* at its own level α_k
(alpha-spending), so a key with α would miss at every run. Every detector only validates α
when fitting and reads it when testing, so a cached detector is used through a copy at this
audit's α (:func:`at_level`); ``tests/service/audits/test_reference_cache.py`` checks that a detector
fitted at one α and re-levelled gives the result of one fitted at the other.
"""
from __future__ import annotations

import copy
import functools
from dataclasses import dataclass
from typing import Any, Callable

import numpy
import pandas
import scipy
import sklearn

import detectors
from audit.pipeline import columns, stages
from audit.pipeline.reference_cache import ReferenceCache, cache_key, frame_digest, source_digest

STATE_VERSION = 1  # bump when what the stages cache changes shape
# Options that never reach a fit (test-time level, reporting, slice search); every other option
# is in the key, so an option added later invalidates rather than serves stale state.
NOT_FITTING = frozenset({"alpha", "budget", "discovery", "evidently_companion", "saturation_threshold",
                         "annotations", "harm_tolerance"})


@dataclass(frozen=True)
class ReferenceFits:
    """One audit's view of the cache: its base key plus the level its tests run at."""

    cache: ReferenceCache
    key: str
    alpha: float

    def fitted(self, part: str, fit: Callable[[], Any], **depends: Any) -> Any:
        """``fit()``'s value for ``part``, computed once per benchmark, at this audit's α."""
        return at_level(self.cache.get_or_compute(cache_key(self.key, part, depends), fit), self.alpha)


def at_level(fitted: Any, alpha: float) -> Any:
    """A shallow copy of a fitted detector that tests at ``alpha``, with the detectors it holds
    (``OutputShiftDetector``'s covariate detector, ``EmbeddingShiftDetector``'s MMD) re-levelled
    too; the cached object itself is never changed (threads share it). Objects without an
    ``alpha`` (the performance estimators) are returned as they are."""
    if not hasattr(fitted, "alpha") or not hasattr(fitted, "fit"):
        return fitted
    out = copy.copy(fitted)
    out.alpha = alpha
    for name, value in list(vars(out).items()):
        if name != "alpha" and hasattr(value, "alpha") and hasattr(value, "fit"):
            setattr(out, name, at_level(value, alpha))
    return out


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """The detectors' and stages' source plus the numeric libraries: an upgrade invalidates."""
    libraries = {m.__name__: m.__version__ for m in (numpy, pandas, scipy, sklearn)}
    return cache_key(STATE_VERSION, libraries, source_digest(detectors, stages, columns))


def pack_identity(pack: Any) -> dict[str, Any]:
    """Name, version and a hash of the whole pack (an edited pack with the same version differs)."""
    content = pack.to_dict() if hasattr(pack, "to_dict") else repr(pack)
    return {"name": getattr(pack, "name", None), "version": getattr(pack, "version", None),
            "content": cache_key(content)}


def fitting_options(options: dict[str, Any], min_slice_size: int) -> dict[str, Any]:
    return {**{k: v for k, v in options.items() if k not in NOT_FITTING}, "min_slice_size": min_slice_size}


def for_audit(cache: ReferenceCache | None, benchmark: Any, benchmark_digest: str | None, columns: Any,
              classes: list[str], pack: Any, options: dict[str, Any], min_slice_size: int,
              alpha: float) -> ReferenceFits | None:
    """The audit's :class:`ReferenceFits`, or None without a cache. ``benchmark_digest`` is the
    stored dataset's sha256 when there is one; otherwise the frame is hashed (0.3 s for 200,000
    rows x 25 columns)."""
    if cache is None:
        return None
    digest = benchmark_digest or frame_digest(benchmark)
    key = cache_key("audit-reference", code_version(), digest, columns.to_dict(), list(classes),
                    pack_identity(pack), fitting_options(options, min_slice_size))
    return ReferenceFits(cache=cache, key=key, alpha=alpha)
