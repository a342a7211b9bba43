-- Memory is bitemporal. A row of facts is one belief: its content holds from
-- valid_from until valid_to (valid time), and it was believed from recorded_at
-- until superseded_at (record time). A belief is never rewritten; only its
-- record time is closed. "That changed" at an instant closes the current row
-- in record time at that instant and records, from that instant, a
-- restatement of it that holds only until then: the restatement `restates`
-- the row, the row is `restated_as` the restatement. "That was wrong" closes
-- the row in record time and retracts it. superseded_by still links a version
-- to the next version of the fact (the row the change wrote).
alter table facts
  add column restates uuid references facts (id),
  add column restated_as uuid references facts (id);
-- Only the current version changes, and a restatement is never current: no
-- row is both a restatement and restated.
alter table facts add constraint facts_restated_once check (restates is null or restated_as is null);
create index facts_restates_idx on facts (restates) where restates is not null;
create index facts_superseded_by_idx on facts (superseded_by) where superseded_by is not null;

-- A vector is searchable while its fact is readable, valid and still believed.
create or replace function roster_sync_embedding_searchable() returns trigger
language plpgsql
security definer
set search_path = public, pg_temp
as $$
begin
  if new.trust is distinct from old.trust or new.valid_to is distinct from old.valid_to
     or new.superseded_at is distinct from old.superseded_at then
    update fact_embeddings
      set searchable = (new.trust in ('candidate', 'active', 'verified') and new.valid_to is null and new.superseded_at is null)
      where fact_id = new.id;
  end if;
  return new;
end
$$;
drop trigger facts_sync_embedding_searchable on facts;
create trigger facts_sync_embedding_searchable after update of trust, valid_to, superseded_at on facts
  for each row execute function roster_sync_embedding_searchable();

-- The full-text arm finds only what is believed now and valid now.
create or replace function roster_search_full_text(p_query text, p_limit integer)
returns table (id uuid, score real)
language sql
stable
security definer
set search_path = public, pg_temp
as $$
  select f.id, ts_rank_cd(f.search_vector, to_tsquery('english', p_query)) as score
  from facts f
  where f.search_vector @@ to_tsquery('english', p_query)
    and f.agent_id = roster_scope_agent()
    and (f.audience = 'agent' or (f.person_id = roster_scope_person() and roster_scope_audience() = 'private'))
    and f.trust in ('candidate', 'active', 'verified')
    and f.superseded_at is null
    and (f.valid_to is null or f.valid_to > now())
  order by score desc, f.recorded_at desc
  limit least(greatest(p_limit, 1), 1000)
$$;

-- Changes recorded before this migration closed the old row's validity in
-- place, so the row says it was believed valid only until the change from the
-- moment it was recorded. The successor's recorded_at says when the change
-- was recorded: rebuild each such row as the two beliefs it was, the row
-- (valid for good, believed until the change) and its restatement (valid
-- until the change, believed since). Forgotten rows keep nothing to rebuild.
with changed as (
  select a.id, b.recorded_at as changed_at
  from facts a
  join facts b on b.id = a.superseded_by
  where a.superseded_at is null and a.valid_to is not null and a.restated_as is null and a.restates is null
    and a.trust <> 'forgotten'
), restated as (
  insert into facts (agent_id, person_id, audience, content, content_hash, category, trust, valid_from, valid_to,
    recorded_at, superseded_by, source_message_ids, actor_kind, actor_id, channel, tool, untrusted_input, uses,
    last_used_at, restates)
  select a.agent_id, a.person_id, a.audience, a.content, a.content_hash, a.category, a.trust, a.valid_from, a.valid_to,
    greatest(c.changed_at, a.recorded_at), a.superseded_by, a.source_message_ids, a.actor_kind, a.actor_id, a.channel,
    a.tool, a.untrusted_input, a.uses, a.last_used_at, a.id
  from facts a
  join changed c on c.id = a.id
  returning id, restates, recorded_at
)
update facts a
  set restated_as = r.id, superseded_at = r.recorded_at, valid_to = null
  from restated r
  where a.id = r.restates;
