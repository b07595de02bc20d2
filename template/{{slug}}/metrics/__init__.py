"""Prometheus metrics at /metrics, behind a bearer token."""
