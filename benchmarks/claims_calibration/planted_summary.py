"""Tables of planted truths: per audit, and rates per scenario over tables and replicates.

A planted change ends one of four ways: the top change claim names it (right), no change claim at all
(missed: the audit said nothing changed or that it cannot tell — nothing false is claimed), a change
claim that names something else first (wrong), and, whatever the top claim, more than one change claim
where one fact was planted (restated).

A change of one slice's labels is *detectable* when an unpaired test of the slice's own metric, production
before against after planting, gives |z| >= 3: below that no audit at this n can be expected to claim it
(random label noise where the model is near chance barely moves its accuracy). Rates are given over all
truths and over the detectable ones.
"""
from __future__ import annotations

from benchmarks.claims_calibration.counting import wilson

__all__ = ["format_planted", "format_planted_rates"]


def format_planted(outcomes: list) -> str:
    """The first replicate's table, row by row; with more replicates, rates per scenario after it."""
    first = [o for o in outcomes if o.rep == 0]
    text = _format_rows(first)
    if len(first) < len(outcomes):
        text += "\n" + format_planted_rates(outcomes)
    return text


def _line(name: str, rows: list) -> str:
    claimed = [o for o in rows if not o.missed]
    detectable = [o for o in rows if o.detectable]
    right = wilson(sum(o.top_right for o in rows), len(rows))
    right_detectable = wilson(sum(o.top_right for o in detectable), len(detectable))
    named = wilson(sum(o.top_right for o in claimed), len(claimed))
    wrong = sum(not o.top_right and not o.missed for o in rows)
    restated = wilson(sum(o.restated for o in rows), len(rows))
    missed = f"{sum(o.missed for o in rows)} ({sum(o.missed and not o.detectable for o in rows)})"
    return (f"  {name:<20}{_rate(right):<29}{_rate(right_detectable):<29}{_rate(named):<29}{missed:>10}{wrong:>6}"
            f"   {_rate(restated)}")


def format_planted_rates(outcomes: list) -> str:
    """Per scenario over tables and replicates: top claim right (of all, of the detectable truths, and of
    the audits that claimed a change), missed (of which not detectable), wrong, and restated (> 1 change
    claim)."""
    reps = len({o.rep for o in outcomes})
    tables = len({o.table for o in outcomes})
    lines = [f"planted truths, {tables} real tables x {reps} draws (SYNTHETIC changes): rate [Wilson 95 %]",
             f"  {'scenario':<20}{'top claim right':<29}{'right, detectable':<29}{'right when claimed':<29}"
             f"{'missed (undetectable)':>10}{'wrong':>6}   restated (> 1 change claim)"]
    for scenario in dict.fromkeys(o.scenario for o in outcomes):
        lines.append(_line(scenario, [o for o in outcomes if o.scenario == scenario and o.error is None]))
    lines.append(_line("all", [o for o in outcomes if o.error is None]))
    errors = sum(o.error is not None for o in outcomes)
    if errors:
        lines.append(f"  ({errors} audits failed and are left out)")
    return "\n".join(lines)


def _rate(rate) -> str:
    return f"{rate.k}/{rate.n} = {rate.rate:.2f} [{rate.low:.2f}, {rate.high:.2f}]" if rate.n else "-"


def _format_rows(outcomes: list) -> str:
    lines = ["planted truths (SYNTHETIC changes on real tables; production labelled): top change claim",
             f"  {'table':<14}{'scenario':<17}{'expected':<18}{'top':<22}{'ok':<4}{'claims':>7}{'same':>6}"
             f"  {'severity':<9}{'status':<13}measured"]
    for o in outcomes:
        measured = "-" if o.cites_measured is None else ("yes" if o.cites_measured else "no")
        lines.append(f"  {o.table:<14}{o.scenario:<17}{o.expected:<18}{o.top_kind:<22}{'Y' if o.top_right else 'N':<4}"
                     f"{o.n_change_claims:>7}{o.n_expected_kind:>6}  {o.severity:<9}{o.status:<13}{measured}"
                     + (f"  ERROR {o.error}" if o.error else ""))
    right = sum(o.top_right for o in outcomes)
    lines.append(f"  top claim right in {right}/{len(outcomes)}; claims = change claims in the audit, same = of "
                 "the expected kind (more than 1 = restated)")
    return "\n".join(lines)
