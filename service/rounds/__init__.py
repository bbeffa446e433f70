"""Benchmark rounds (SPEC §8): a named series of labelled rounds, their statistics and exports.

Modules: ``models`` (tables), ``store`` (persistence), ``frames`` (a round's table in a standard
shape), ``stats`` (metric, improvement, stall, saturation, MER/vMER), ``annotators``,
``coverage`` (plan coverage), ``series`` (the typed series summary), ``exports``.
Kept free of heavy imports so that the API starts fast.
"""
