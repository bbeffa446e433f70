"""Expert scenarios: a named cause of change, the signature it predicts, and what to do about it.

A domain expert knows how production usually drifts away from a benchmark: a new camera, a new
clinic, more dim images, a new deepfake generator. A :class:`Scenario` writes one such cause down as
the observable :class:`Signal` s it predicts — which context's mix moves and which way, which input
moves, which class grows, which slice it hurts — and the action it calls for. An audit ranks the
declared scenarios by how well they explain its accepted change claims and says "none of the known
scenarios" when none fits (see ``audit.claims.scenarios``).

>>> s = Scenario(name="dim_lighting", title="More dim images", cause="Production images are darker.",
...              signals=[{"context": "illumination", "value": "dim", "moves": "up"},
...                       {"slice": "dim_or_backlit", "hurts": True}],
...              action="Label dim production images and add exposure augmentation.")
>>> [sig.describe() for sig in s.signals]
['the share of illumination = dim goes up', 'the model does worse on dim_or_backlit']
"""
from __future__ import annotations

from typing import Literal, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["Signal", "Scenario"]

Scalar = Union[bool, int, float, str]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Signal(_Frozen):
    """One observable a scenario predicts. Exactly one of ``context``, ``slice``, ``feature`` or ``label``.

    * ``context`` (with an optional ``value``): the context's mix changes, or the value's share goes
      ``up`` / ``down`` (a numeric context's values go up or down);
    * ``slice``: the expert slice's share goes ``up`` / ``down``, or with ``hurts`` the model does worse
      there in production;
    * ``feature``: the input column's distribution changes (its values go ``up`` / ``down``);
    * ``label``: the class's share goes ``up`` / ``down``.
    """

    context: str | None = None
    value: Scalar | None = None
    slice: str | None = None
    feature: str | None = None
    label: str | None = None
    moves: Literal["up", "down", "changes"] = "changes"
    hurts: bool = False

    @model_validator(mode="after")
    def _one_subject(self) -> "Signal":
        subjects = [k for k in ("context", "slice", "feature", "label") if getattr(self, k) is not None]
        if len(subjects) != 1:
            named = subjects or "none"
            raise ValueError(f"a signal names exactly one of context, slice, feature or label; got {named}")
        if self.value is not None and self.context is None:
            raise ValueError("'value' is only for a context signal")
        if self.hurts and self.slice is None:
            raise ValueError("'hurts' is only for a slice signal")
        if self.hurts and self.moves != "changes":
            raise ValueError("a slice signal either moves (its share) or hurts (its metric), not both")
        return self

    @property
    def subject(self) -> str:
        return next(str(getattr(self, k)) for k in ("context", "slice", "feature", "label")
                    if getattr(self, k) is not None)

    def describe(self) -> str:
        """The prediction in words."""
        if self.hurts:
            return f"the model does worse on {self.slice}"
        what = {"context": "context", "slice": "slice", "feature": "input", "label": "class"}
        kind = next(k for k in what if getattr(self, k) is not None)
        if kind == "context" and self.value is not None:
            subject = f"the share of {self.context} = {self.value}"
        elif kind in ("slice", "label"):
            subject = f"the share of {self.subject}"
        else:
            subject = f"{self.subject}" if self.moves != "changes" else f"the mix of {self.subject}"
        verb = {"up": "goes up", "down": "goes down", "changes": "changes"}[self.moves]
        return f"{subject} {verb}"


class Scenario(_Frozen):
    """A named cause of change, the signals it predicts and the action it calls for."""

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    title: str = Field(min_length=3)
    cause: str = Field(min_length=10)
    signals: tuple[Signal, ...] = Field(min_length=1)
    action: str = Field(min_length=10)
    reference: str | None = None
