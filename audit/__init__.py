"""The audit as a library: what an audit concludes from its detectors' evidence.

:mod:`audit.claims` is the claim layer: from the typed evidence of an audit and the rows behind it,
it decides which findings are claims, which claim a finding restates, and which cause explains
which side effect (one mechanism for every kind). It imports ``reports``, ``detectors`` and
``domains``, never ``service``.
"""
