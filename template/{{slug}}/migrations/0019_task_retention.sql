-- History retention (SPEC §6.6; tasks/retention.py and files/cleanup.py run it).
--
-- Terminal tasks older than `[tasks] history_days` are deleted with their attempts, pins and
-- dead-letter receipts (ON DELETE CASCADE since 0004/0006). The credit ledger is the books: it is
-- kept, so its task id becomes history like a task's input snapshot or the operator log's task
-- id, with no foreign key (an account's deletion still takes its entries, through account_id).
ALTER TABLE credit_ledger DROP CONSTRAINT credit_ledger_task_id_fkey;

-- Rows of deleted files are forgotten once no retained task names them as its result: the
-- oldest first.
CREATE INDEX file_deleted_idx ON file (deleted_at) WHERE status = 'deleted';

-- Sessions are deleted a day after their absolute expiry (auth/sessions.py purge_ended): every
-- sign-in adds a row, so this table grows with traffic too.
CREATE INDEX session_expires_idx ON session (expires_at);
