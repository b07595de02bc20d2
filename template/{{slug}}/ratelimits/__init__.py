"""Per-account request counters in the database (docs/security.md: rate limits)."""
