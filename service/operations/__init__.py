"""Operational endpoints: the liveness probe and Prometheus metrics.
"""
