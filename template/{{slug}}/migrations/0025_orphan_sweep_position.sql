-- Where the orphan sweep stands (issue 33, the cost of history). A maintenance pass used to list
-- every object under the site's prefix to find the few that no row names, so each pass cost more
-- with every result a site keeps. Now a pass looks at a bounded number of keys after the last one
-- the previous pass looked at, going round to the start at the end of the bucket
-- (files/cleanup.py, purge_orphans); this row remembers that key. NULL: the next pass starts at
-- the first key.
CREATE TABLE file_orphan_sweep (
    singleton  boolean PRIMARY KEY DEFAULT true CONSTRAINT file_orphan_sweep_one_row CHECK (singleton),
    after_key  text,
    moved_at   timestamptz NOT NULL DEFAULT now()
);

INSERT INTO file_orphan_sweep DEFAULT VALUES;
