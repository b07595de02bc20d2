"""The operator console: the ``ops_action`` log and the ``/api/ops`` routes (docs/operations.md)."""
