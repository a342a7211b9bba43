-- A server backup (`roster backup`) is pg_dump reading as roster_ops under
-- row-level security: the tables force it on their owner, so a managed
-- Postgres's plain owner role cannot read them with it off, and sees no rows
-- with it on. roster_ops reads every table; pg_dump also reads each
-- sequence's position, which needs SELECT on it. USAGE (nextval) was granted
-- where roster_ops inserts; SELECT reads the position only.
grant select on all sequences in schema public to roster_ops;
