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
from collections.abc import Mapping

from reports.derived_note import derived_note
from reports.formatting import fmt_decision, fmt_metric, fmt_n, fmt_value, metric_label, shorten
from reports.limitations import verdict
from reports.reading import is_local, pack_title
from reports.records import CORRECTION_LABELS, KIND_LABELS
from reports.report_images import ReportImages
from reports.result import AuditEvidence, LimitationRecord, Verdict, as_evidence

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


def _context_line(audit: AuditEvidence) -> str:
    params, overall = audit.parameters, audit.overall
    correction = CORRECTION_LABELS.get(params.correction or "bh", md_escape(params.correction, 40))
    alpha = fmt_value(params.alpha or 0.05)
    source = "a local contextshift audit" if is_local(audit) else f"contextshift audit {md_escape(audit.id, 80)}"
    names = [md_escape(ref.name or ref.id or side, 80)
             for side, ref in (("benchmark", audit.benchmark), ("production", audit.production))]
    parts = [
        f"This section comes from {source}, which compared "
        f"{fmt_n(audit.benchmark.n_rows)[2:]} benchmark rows ({names[0]}) with "
        f"{fmt_n(audit.production.n_rows)[2:]} production rows ({names[1]}) under the "
        f"{md_escape(pack_title(audit), 80)} domain pack.",
    ]
    if overall is not None and overall.benchmark_value is not None:
        value = fmt_metric(overall.benchmark_value, overall.benchmark_ci)
        parts.append(f"Benchmark {metric_label(audit.metric)}: {value} "
                     f"({fmt_n(overall.n or audit.benchmark.n_rows)}, 95 % CI).")
    parts.append(f"Findings are listed only when they are statistically significant after {correction} correction "
                 f"(α = {alpha}) and large enough to matter, except contexts the benchmark cannot evaluate.")
    derived = derived_note(audit)  # image-derived contexts: measured from pixels, not recorded
    if derived:
        parts.append(md_escape(derived, 2000))
    return " ".join(parts)


def _verdict_line(v: Verdict) -> str:
    """``Verdict: …`` in words: never "none severity"; an inconclusive audit says so first."""
    if v.status == "inconclusive":
        head = "Inconclusive"
    elif v.severity == "none":
        head = "no change detected" if not v.shift_detected else "shift detected, no limitation"
    else:
        head = f"{v.severity} severity"
    return f"**Verdict: {head}.** {md_escape(v.summary)}"


def _item_line(lim: LimitationRecord) -> str:
    kind = KIND_LABELS.get(lim.kind, lim.kind.replace("_", " "))
    decision = fmt_decision(lim.decision)
    tail = f" _Decided by: {md_escape(decision)}_" if decision else ""
    return f"{lim.rank}. **{lim.severity.capitalize()} — {kind.lower()}.** {md_escape(lim.statement)}{tail}"


def render_markdown(audit: AuditEvidence | Mapping, *, heading_level: int = 2,
                    images: ReportImages | None = None) -> str:
    """The "Model limitations" section: verdict, ranked limitations with numbers and CIs, context.

    ``audit`` is an AuditResult or its JSON (or evidence concluded by :func:`reports.conclude`),
    rendered with its own limitations and verdict. ``images``: as for the HTML report
    (:func:`reports.report_images.report_images`); its notes (a skin-tone finding's brightness and
    cast) are shown under their limitation."""
    if not 1 <= heading_level <= 5:
        raise ValueError("heading_level must be between 1 and 5.")
    h = "#" * heading_level
    audit = as_evidence(audit)
    ordered = sorted(audit.limitations, key=lambda lim: lim.rank)
    # the AuditResult's own verdict: computed once, where its limitations were
    v = audit.verdict or verdict(audit, ordered)
    lines = [f"{h} Model limitations", "", _verdict_line(v), ""]
    changes = [lim for lim in ordered if lim.claim == "change"]
    standing = [lim for lim in ordered if lim.claim == "standing"]
    notes = images.notes if images is not None else {}

    def _item(lim: LimitationRecord) -> str:
        note = notes.get(str(lim.key or lim.rank))
        return _item_line(lim) + (f"\n   _{md_escape(note)}_" if note else "")

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
    fits = next((m for m in audit.scenarios if m.fits), None)
    if fits is not None:
        lines += ["", f"**Known scenario that best explains the changes: {md_escape(fits.title)}.** "
                      f"{md_escape(fits.cause)} Suggested action: {md_escape(fits.action)}"]
    elif audit.scenarios and changes:
        lines += ["", "None of the domain pack's known scenarios fits the changes found."]
    if not ordered:
        lines.append("Nothing could be claimed: the tests that matter could not run (this is not an all-clear)."
                     if v.status == "inconclusive" else
                     "No limitation was found: no weak or untested context and no shift that passes the tests.")
    lines += ["", f"{h}# How this was measured", "", _context_line(audit),
              "Severity weighs each problem's share of production by the size of its performance gap.", ""]
    return "\n".join(lines)
