"""Domain packs: the store of packaged and custom packs (``store``: the registry), their tables
(``models``), size limits, and the ``/v1/domains`` routes and bodies (``routes``, ``schemas``).
"""
