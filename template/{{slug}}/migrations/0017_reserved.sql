-- Placeholder on branch mail only: 0017 is another branch's migration. Deleted at merge.
SELECT 1;
