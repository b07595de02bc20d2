-- Placeholder on branch history only: 0016 is another branch's migration. Deleted at merge.
SELECT 1;
