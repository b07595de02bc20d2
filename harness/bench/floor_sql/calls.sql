-- The site's three calls with the arguments its web and worker pass (tasks/submission.py,
-- tasks/lifecycle.py, tasks/results.py) for a free task of text-normalize@1 whose result is bounded by
-- its input's size. pgbench takes a colon before a name for a variable: the rate key spells its colons chr(58).
SELECT id AS tid
FROM task_submit($owner, 'account' || chr(58) || $owner || chr(58) || 'write', 60, 1000000000, gen_random_uuid(),
                 decode(repeat('ab', 32), 'hex'), 1000000, $file, ARRAY['text/plain'], gen_random_uuid(),
                 'text-normalize', 1, '{"trimTrailingWhitespace": true}', 3, 0, gen_random_uuid(), 30, 1, 0, 10485760,
                 NULL) \gset
SELECT result_file_id AS rid
FROM task_claim(:tid, 1, 120, gen_random_uuid(), '$prefix', 'text/plain', 1000000000000, 24) \gset
SELECT task_publish(:tid, 1, :rid, 'result.txt', $result_size, decode(repeat('ef', 32), 'hex'));
