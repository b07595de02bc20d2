-- The submit's message counted in the submit's own call (issue 33): a submit was three web round
-- trips, the session's read, task_submit and then nextval for the message sent; now two. The
-- count moves to the statements that record a send: task_submit's call counts the message of the
-- task it queues, and a send that fails takes that count back in the transaction that puts the
-- task back to pending (event 'message_unsent'; tasks/delivery.py). Re-sends are counted after
-- their send, as before. Either way the count follows what the database records: a web process
-- that dies between the commit and the send leaves a counted message the broker never got (the
-- task stays queued and maintenance re-sends it, counted again), as the sequence may already run
-- ahead after a crash of the server (0017).

-- tally: one task message counted (the sequence of 0017); its value, which callers ignore.
CREATE FUNCTION tally_message_sent() RETURNS bigint
LANGUAGE sql AS $$
    SELECT nextval('task_message_sent_seq');
$$;

ALTER TABLE event_tally DROP CONSTRAINT event_tally_known;
ALTER TABLE event_tally ADD CONSTRAINT event_tally_known CHECK (event IN (
    'maintenance_pass', 'lease_recovered', 'storage_error',
    'dead_letter_applied', 'dead_letter_deferred', 'dead_letter_stale', 'dead_letter_missing',
    'dead_letter_invalid', 'message_unsent'
));
