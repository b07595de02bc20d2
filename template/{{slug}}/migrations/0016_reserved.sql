-- Placeholder on branch mail only: 0016 is another branch's migration. Deleted at merge.
SELECT 1;
