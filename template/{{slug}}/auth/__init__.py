"""Personal accounts, passwords and sessions."""
