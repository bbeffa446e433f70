"""Benchmark rounds: a named series of labelled rounds, their statistics and exports.

Modules: ``models`` (tables), ``store`` (persistence), ``frames`` (a round's table in a standard
shape), ``stats`` (metric, improvement, each round's online decision, stall, saturation,
MER/vMER), ``annotators``, ``coverage`` (plan coverage), ``series`` (the typed series summary),
``statement`` (the one-sentence summary, label noise), ``exports``, ``routes`` (the
``/v1/benchmarks`` API).
Kept free of heavy imports so that the API starts fast.
"""
