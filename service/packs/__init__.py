"""Domain packs: the registry of stored and packaged packs, their size limits and the ``/v1/domains`` routes.
"""
