-- One row that /healthz rewrites on every check, so that a database that
-- answers reads but cannot write (a full disk, a read-only server, a failing
-- volume) is reported as unhealthy instead of ok. A time, nothing else.
create table health_probe (
  id smallint primary key check (id = 1),
  written_at timestamptz not null
);

grant select, insert, update on health_probe to roster_ops;
