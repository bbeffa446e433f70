"""Scheduled monitoring: monitors pull production rows from a folder or a SQL query,
audit them against a benchmark on a schedule, keep trends and alert once per finding.

Modules: ``models`` (tables), ``store`` (persistence and compare-and-set steps), ``sources``
(directory and SQL), ``budget`` (the lifetime false-alarm budget and harm tracking),
``findings`` (what alerts), ``alerting`` (de-duplication, webhooks), ``runner`` (one run),
``service`` and ``scheduler`` (inside the API), ``local`` (``contextshift monitor run --config``),
``routes`` and ``alert_routes`` (the ``/v1/monitors`` and ``/v1/alerts`` API).
"""
