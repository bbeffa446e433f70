"""Audits: the audit store, the worker that runs queued audits through :func:`audit.run_audit`,
local execution (CLI, monitors), the Dask engine, the report's image thumbnails and the
``/v1/audits`` routes.
"""
