-- One audit of the books at a time per site, whichever web process runs it (ops/audits.py).
--
-- The run holds a session advisory lock for its whole length, so a process that dies mid-run
-- frees it with its connection; this one row only says since when the current run has been
-- going, for the 409 a second run answers. It is written in the statement that takes the lock.
CREATE TABLE ops_audit_run (
    one         boolean PRIMARY KEY DEFAULT true,
    started_at  timestamptz NOT NULL,
    CONSTRAINT ops_audit_run_single CHECK (one)
);
