r"""A "Model limitations" section for a model card, in Markdown.

User strings inside statements are neutralised for Markdown renderers: ``<`` where a tag or
autolink could start, ``*``, ``$``, ``~``, backticks, ``|`` and backslashes are backslash-escaped,
``](`` is broken so no link or image can be formed, word-boundary underscores are escaped, and
newlines are folded into spaces.

>>> md_escape("<script>alert(1)</script> [x](javascript:y) a_b _c_")
'\\<script>alert(1)\\</script> [x]\\(javascript:y) a_b \\_c\\_'
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from types import SimpleNamespace

from reports.formatting import as_list, fmt_decision, fmt_metric, fmt_n, fmt_value, get, metric_label, num, shorten
from reports.limitations import Limitation, verdict
from reports.reading import as_dict, is_local, legacy, pack_title
from reports.records import CORRECTION_LABELS, KIND_LABELS, claim_of

__all__ = ["render_markdown", "md_escape"]

MARKDOWN_CAP = 50
_SPECIAL = re.compile(r"([\\`*|~$]|<(?=[A-Za-z/!?]))")  # "<" only where a tag or autolink could start
_EDGE_UNDERSCORE = re.compile(r"(?<!\w)_|_(?!\w)")


def md_escape(text, limit: int = 2000) -> str:
    """One line of text that renders literally in CommonMark/GFM."""
    s = shorten(text, limit)
    s = _SPECIAL.sub(r"\\\1", s)
    s = _EDGE_UNDERSCORE.sub(r"\\_", s)
    return s.replace("](", "]\\(")


def _context_line(audit: Mapping) -> str:
    params = get(audit, "parameters", default={})
    metric = metric_label(get(audit, "overall", "metric") or get(params, "primary_metric"))
    correction = CORRECTION_LABELS.get(str(get(params, "correction") or "bh"), md_escape(get(params, "correction"), 40))
    alpha = fmt_value(num(get(params, "alpha")) or 0.05)
    source = ("a local contextshift audit" if is_local(audit)
              else f"contextshift audit {md_escape(get(audit, 'id'), 80)}")
    names = [md_escape(get(audit, side, "name") or get(audit, side, "id") or side, 80)
             for side in ("benchmark", "production")]
    parts = [
        f"This section comes from {source}, which compared "
        f"{fmt_n(get(audit, 'benchmark', 'n_rows'))[2:]} benchmark rows ({names[0]}) with "
        f"{fmt_n(get(audit, 'production', 'n_rows'))[2:]} production rows ({names[1]}) under the "
        f"{md_escape(pack_title(audit), 80)} domain pack.",
    ]
    if num(get(audit, "overall", "benchmark_value")) is not None:
        value = fmt_metric(get(audit, "overall", "benchmark_value"), get(audit, "overall", "benchmark_ci"))
        parts.append(f"Benchmark {metric}: {value} "
                     f"({fmt_n(get(audit, 'overall', 'n') or get(audit, 'benchmark', 'n_rows'))}, 95 % CI).")
    parts.append(f"Findings are listed only when they are statistically significant after {correction} correction "
                 f"(α = {alpha}) and large enough to matter, except contexts the benchmark cannot evaluate.")
    return " ".join(parts)


def _records(audit: Mapping, limitations) -> list:
    """Limitations as records with ``rank, kind, severity, title, statement, claim, decision``: as given,
    else read from the AuditResult JSON."""
    if limitations is not None:
        return list(limitations)
    return [SimpleNamespace(rank=d.get("rank") or 0, kind=str(d.get("kind") or ""), key=d.get("key"),
                            severity=str(d.get("severity") or "low"), title=str(d.get("title") or ""),
                            statement=str(d.get("statement") or ""), claim=claim_of(d), decision=d.get("decision"))
            for d in as_list(audit.get("limitations"))]


def _verdict_line(v: Mapping) -> str:
    """``Verdict: …`` in words: never "none severity"; an inconclusive audit says so first."""
    status = v.get("status")
    if status == "inconclusive":
        head = "Inconclusive"
    elif v.get("severity") in (None, "none"):
        head = "no change detected" if not v.get("shift_detected") else "shift detected, no limitation"
    else:
        head = f"{v['severity']} severity"
    return f"**Verdict: {head}.** {md_escape(v['summary'])}"


def _item(lim) -> str:
    kind = KIND_LABELS.get(lim.kind, lim.kind.replace("_", " "))
    decision = fmt_decision(getattr(lim, "decision", None))
    tail = f" _Decided by: {md_escape(decision)}_" if decision else ""
    return f"{lim.rank}. **{lim.severity.capitalize()} — {kind.lower()}.** {md_escape(lim.statement)}{tail}"


def render_markdown(audit: Mapping, limitations: Sequence[Limitation] | None = None, *,
                    heading_level: int = 2) -> str:
    """The "Model limitations" section: verdict, ranked limitations with numbers and CIs, context.

    ``limitations`` default to the AuditResult's own (``audit["limitations"]``)."""
    if not 1 <= heading_level <= 5:
        raise ValueError("heading_level must be between 1 and 5.")
    h = "#" * heading_level
    audit = legacy(audit)
    limitations = _records(audit, limitations)
    v = verdict(audit, limitations)
    lines = [f"{h} Model limitations", "", _verdict_line(v), ""]
    ordered = sorted(limitations, key=lambda lim: lim.rank)
    changes = [lim for lim in ordered if claim_of(lim) == "change"]
    standing = [lim for lim in ordered if claim_of(lim) == "standing"]
    if changes:
        lines += [f"{h}# What changed in production", ""]
        lines += [_item(lim) for lim in changes[:MARKDOWN_CAP]]
        if len(changes) > MARKDOWN_CAP:
            lines += ["", f"_{len(changes) - MARKDOWN_CAP:,} lower-ranked changes are omitted; see the audit report._"]
    if standing:
        lines += ["", f"{h}# Standing limitations (model card)", "",
                  "Properties the benchmark shows as well; they are not changes and never alert.", ""]
        lines += [_item(lim) for lim in standing[:MARKDOWN_CAP]]
        if len(standing) > MARKDOWN_CAP:
            lines += ["", f"_{len(standing) - MARKDOWN_CAP:,} more standing limitations are omitted; see the audit "
                          "report._"]
    if not ordered:
        lines.append("Nothing could be claimed: the tests that matter could not run (this is not an all-clear)."
                     if v.get("status") == "inconclusive" else
                     "No limitation was found: no weak or untested context and no shift that passes the tests.")
    lines += ["", f"{h}# How this was measured", "", _context_line(audit),
              "Severity weighs each problem's share of production by the size of its performance gap.", ""]
    return "\n".join(lines)
