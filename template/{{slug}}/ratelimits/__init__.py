"""Per-account request counters in the database (SPEC §8)."""
