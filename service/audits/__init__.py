"""Audits: the audit store, the worker that runs queued audits, local execution (CLI, monitors),
the pipeline, the Dask engine, the report's image thumbnails and the ``/v1/audits`` routes.
"""
