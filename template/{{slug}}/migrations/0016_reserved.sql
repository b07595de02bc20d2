-- Placeholder on branch `alerts` only: 0016 belongs to another branch. Delete this file when
-- merging (the runner refuses gaps, so 0017 needs a 0016 before it).
SELECT 1;
