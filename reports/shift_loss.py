"""The severity of a shift over all of production: an assumed loss per unit of effect, capped by the
loss measured on labelled production rows (measured beats assumed)."""
from __future__ import annotations

from reports.formatting import fmt_num, metric_label
from reports.records import RankingContext

__all__ = ["shift_loss"]


def _assumed(ctx: RankingContext, effect: float, gap: float | None = None) -> str:
    """The sentence that says a severity rests on an assumed, not a measured, loss."""
    gap = ctx.priors.shift_gap if gap is None else gap
    return (f" Nothing here measures the model's loss: the severity assumes {fmt_num(gap)} of "
            f"{metric_label(ctx.metric)} per unit of effect ({fmt_num(effect)}).")


def shift_loss(ctx: RankingContext, effect: float, gap: float | None = None) -> tuple[float, str, str]:
    """``(score, basis, sentence)`` of a shift over all of production: ``effect × gap`` with ``gap`` the
    assumed loss of a shift of effect 1 (default ``priors.shift_gap``). Measured beats assumed: with
    labelled production the overall loss measured there (point value, at least 0, its Newcombe/MOVER
    interval stated) caps it, since a shift cannot cost more than everything that changed did; a drop
    beyond that is its own claim (the overall change test), not this shift's."""
    gap = ctx.priors.shift_gap if gap is None else gap
    assumed = effect * gap
    m = ctx.measured
    if m is None:
        return (assumed, f"effect {effect:.3f} × assumed gap {gap:.2f} (assumed: nothing here measures the model's "
                "loss)", _assumed(ctx, effect, gap))
    loss = max(0.0, m.loss)
    interval = f"{fmt_num(m.loss)} [{fmt_num(m.loss_ci[0])}, {fmt_num(m.loss_ci[1])}]"
    if loss < assumed:
        return (loss, f"measured loss {loss:.3f} over all of production (interval {interval}, labelled production)",
                m.sentence() + " The severity uses this measured loss, not an assumed one.")
    return (assumed, f"effect {effect:.3f} × assumed gap {gap:.2f}, below the measured overall loss {interval}",
            m.sentence() + f" The shift itself is scored {fmt_num(assumed, 3)} (assumed {fmt_num(gap)} of "
                           f"{metric_label(ctx.metric)} per unit of effect {fmt_num(effect)}); the drop is stated "
                           "on its own.")
