"""Datasets: upload and intake (formats, bounded reading, coercion, validation, frame checks),
storage as Parquet parts, registration of the user's own files, and the ``/v1/datasets`` routes.
"""
