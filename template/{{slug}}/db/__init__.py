"""PostgreSQL access: the pool, named SQL statements and the migration runner."""
