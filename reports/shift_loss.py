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
    labelled production the overall loss measured there caps it, since a shift cannot cost more than
    everything that changed did; a drop beyond that is its own claim (the overall change test), not this
    shift's. A measured loss counts only when decided (its interval excludes 0): one within sampling
    error says the cost cannot be told, and the severity is the interval's lower end, 0."""
    gap = ctx.priors.shift_gap if gap is None else gap
    assumed = effect * gap
    m = ctx.measured
    if m is None:
        return (assumed, f"effect {effect:.3f} × assumed gap {gap:.2f} (assumed: nothing here measures the model's "
                "loss)", _assumed(ctx, effect, gap))
    interval = f"{fmt_num(m.loss)} [{fmt_num(m.loss_ci[0])}, {fmt_num(m.loss_ci[1])}]"
    if m.loss_ci[1] < 0:  # production credibly better: the cost is told, and it is none
        return (0.0, f"measured loss {interval} below 0 (labelled production): production is better, no loss",
                m.sentence() + " Its severity rests on that: no loss.")
    if not m.credible:
        return (0.0, f"measured loss {interval} within sampling error (labelled production): no decided loss",
                m.sentence() + " Its cost cannot be told from this audit, so its severity is the "
                "interval's lower end, no loss.")
    loss = m.loss
    if loss < assumed:
        return (loss, f"measured loss {loss:.3f} over all of production (interval {interval}, labelled production)",
                m.sentence() + " The severity uses this measured loss, not an assumed one.")
    return (assumed, f"effect {effect:.3f} × assumed gap {gap:.2f}, below the measured overall loss {interval}",
            m.sentence() + f" The shift itself is scored {fmt_num(assumed, 3)} (assumed {fmt_num(gap)} of "
                           f"{metric_label(ctx.metric)} per unit of effect {fmt_num(effect)}); the drop is stated "
                           "on its own.")
