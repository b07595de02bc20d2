-- Placeholder on branch history only: 0018 is another branch's migration. Deleted at merge.
SELECT 1;
