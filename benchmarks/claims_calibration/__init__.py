"""Claims calibration on real tables: how often each claim an audit makes is false under no change,
and whether planted (SYNTHETIC) changes on real tables get the right claim.

* :mod:`.sources` and :mod:`.tables` — real tables shipped in packages, each with a fixed model, a
  scoring pool and a domain pack (``benchmarks/packs``); cached under ``benchmarks/.cache``.
* :mod:`.auditing` — one full in-process audit of a pair (``service.audits.local.audit_frames``).
* :mod:`.counting` — what one audit claims (per kind, change versus standing) and Wilson intervals.
* :mod:`.null` and :mod:`.summary` — null audits (both sides drawn i.i.d. from one pool), their
  JSON Lines log and the rate tables.
* :mod:`.changes` and :mod:`.planted` — planted truths with an expected top claim.
* :mod:`.batches` — successive production batches for monitor runs over time; :mod:`.over_time`
  runs monitors over many runs.

Run it with ``python benchmarks/claims.py [--quick]``.
"""
