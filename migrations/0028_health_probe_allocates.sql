-- /healthz and `roster doctor` prove that the database can still take new
-- writes, not only rewrite a row in a page it already has: each probe empties
-- health_probe (TRUNCATE gives it a new, empty file) and writes its one row
-- again, so the database must allocate a new page on disk. On a full disk
-- that fails as a turn's write would, where an in-place update went through.
grant truncate on health_probe to roster_ops;
