"""HTML pages served by the API: the index of datasets, audits, series and monitors, and the offline ``/docs``.
"""
