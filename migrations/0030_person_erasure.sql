-- A person's erasure: everything Roster holds about one person, with every
-- agent and on every channel, goes. Their facts are forgotten first, one by
-- one, by memory (keyed tombstones, so nothing is learned again from an old
-- message); this function then erases what remains of them, and the person
-- row stays as a tombstone for the audit chain, with no name.
alter table people add column erased_at timestamptz;
alter table people alter column name drop not null;
alter table people add constraint people_name_or_erased check ((name is null) = (erased_at is not null));

-- A person's name and their handles are erased with them, so, like every
-- column a forget erases (0025), they keep no planner statistics: ANALYZE
-- would copy them into pg_statistic, where no erasure reaches. Samples taken
-- before are cleared the way 0025 clears them.
do $statistics$
declare
  place record;
  clearable boolean := to_regprocedure('pg_catalog.pg_clear_attribute_stats(text,text,text,boolean)') is not null;
begin
  for place in
    select * from (values ('people', 'name'), ('identities', 'external_id'), ('identities', 'display_name')) as places (table_name, column_name)
  loop
    if clearable then
      execute format('alter table public.%I alter column %I set statistics 0', place.table_name, place.column_name);
      perform pg_catalog.pg_clear_attribute_stats('public', place.table_name, place.column_name, false);
    else
      execute format('alter table public.%I alter column %I set statistics 1', place.table_name, place.column_name);
      execute format('analyze public.%I (%I)', place.table_name, place.column_name);
      execute format('alter table public.%I alter column %I set statistics 0', place.table_name, place.column_name);
    end if;
  end loop;
end
$statistics$;

-- Erase everything else of one person, as the owner: their lines and the
-- agents' replies to them in every conversation (and every line of their
-- one-to-one conversations), learning events, mirror cases and their runs,
-- episodes built from their lines, approvals and lessons drawn from their
-- words, jobs that name them, their channel handles (a handle that writes
-- again is a stranger), link codes, sign-in links, sessions and API tokens.
--
-- A lesson or a pending approval drawn from their words alone, or from
-- theirs among others', is retired (withdrawn) and its text erased: a
-- paraphrase of several people's statements cannot be told apart word by
-- word. The others' learning events behind it are opened again for review,
-- so the nightly review proposes it again from what they said, for a person
-- to approve. Returns how many rows each place lost.
create function roster_erase_person(p_person uuid)
returns jsonb
language plpgsql
security definer
set search_path = public, pg_temp
as $$
declare
  v_counts jsonb := '{}';
  v_count integer;
  v_messages uuid[];
  v_events uuid[];
  v_cases uuid[];
  v_lessons uuid[];
  v_reopen uuid[];
  v_handles text[];
begin
  if not exists (select 1 from people where id = p_person and erased_at is null) then
    raise exception 'no such person, or already erased' using errcode = '55000';
  end if;

  -- Messages: their own lines and every reply to them, anywhere; every line of their one-to-one conversations.
  with erased as (
    update messages set content = '', forgotten_at = coalesce(forgotten_at, now())
    where (person_id = p_person
           or conversation_id in (select id from conversations where kind = 'dm' and person_id = p_person))
      and (content <> '' or forgotten_at is null)
    returning id
  )
  select coalesce(array_agg(id), '{}') into v_messages from erased;
  v_counts := v_counts || jsonb_build_object('messages', coalesce(array_length(v_messages, 1), 0));
  select coalesce(array_agg(id), '{}') into v_messages from messages
  where person_id = p_person or conversation_id in (select id from conversations where kind = 'dm' and person_id = p_person);

  -- Their one-to-one conversations no longer answer to their chat: the next message from it opens a new one, a stranger's.
  update conversations set external_id = 'erased:' || id::text, person_id = null
  where kind = 'dm' and person_id = p_person;
  get diagnostics v_count = row_count;
  v_counts := v_counts || jsonb_build_object('conversations', v_count);

  select coalesce(array_agg(id), '{}') into v_events from learning_events where person_id = p_person;
  update learning_events set text = '', reviewed_at = coalesce(reviewed_at, now()), harvested_at = coalesce(harvested_at, now())
  where person_id = p_person and text <> '';
  get diagnostics v_count = row_count;
  v_counts := v_counts || jsonb_build_object('learning_events', v_count);

  with erased as (
    update mirror_cases set text = '', text_hash = 'forgotten:' || id::text
    where person_id = p_person or source_event_id = any(v_events) or source_message_id = any(v_messages)
    returning id
  )
  select coalesce(array_agg(id), '{}') into v_cases from erased;
  v_counts := v_counts || jsonb_build_object('mirror_cases', coalesce(array_length(v_cases, 1), 0));
  update mirror_runs set answer = '', reason = '', lessons_shown = '[]'
  where (case_id = any(v_cases) or person_id = p_person) and (answer <> '' or reason <> '' or lessons_shown <> '[]');
  get diagnostics v_count = row_count;
  v_counts := v_counts || jsonb_build_object('mirror_runs', v_count);

  update episodes set summary = '', stale = true, updated_at = now()
  where (person_id = p_person or source_message_ids && v_messages) and (summary <> '' or not stale);
  get diagnostics v_count = row_count;
  v_counts := v_counts || jsonb_build_object('episodes', v_count);

  -- Approvals and lessons of theirs, or citing their words; the others' events behind them go back to review.
  select coalesce(array_agg(distinct (e ->> 'eventId')::uuid), '{}') into v_reopen
  from (
    select evidence from approvals
    where (person_id = p_person or roster_evidence_cites(evidence, v_messages, v_events) or evidence @> jsonb_build_array(jsonb_build_object('personId', p_person)))
      and status = 'pending'
    union all
    select evidence from lessons
    where (person_id = p_person or roster_evidence_cites(evidence, v_messages, v_events) or evidence @> jsonb_build_array(jsonb_build_object('personId', p_person)))
      and status = 'active'
  ) cited, jsonb_array_elements(cited.evidence) e
  where e ->> 'eventId' is not null and e ->> 'personId' is distinct from p_person::text;

  update approvals set text = '[erased]', evidence = '[]', status = case when status = 'pending' then 'rejected' else status end
  where (person_id = p_person or roster_evidence_cites(evidence, v_messages, v_events) or evidence @> jsonb_build_array(jsonb_build_object('personId', p_person)))
    and text <> '[erased]';
  get diagnostics v_count = row_count;
  v_counts := v_counts || jsonb_build_object('approvals', v_count);

  with erased as (
    update lessons set text = '[erased: drawn from the words of a person whose data was erased]', text_hash = 'forgotten:' || id::text,
           minhash = '{}', evidence = '[]', status = 'retired', retired_at = coalesce(retired_at, now()), retired_reason = 'erased'
    where (person_id = p_person or roster_evidence_cites(evidence, v_messages, v_events) or evidence @> jsonb_build_array(jsonb_build_object('personId', p_person)))
      and text_hash not like 'forgotten:%'
    returning id
  )
  select coalesce(array_agg(id), '{}') into v_lessons from erased;
  v_counts := v_counts || jsonb_build_object('lessons', coalesce(array_length(v_lessons, 1), 0));
  -- A replay that showed an erased lesson keeps the other lessons it showed.
  update mirror_runs set lessons_shown = coalesce(
    (select jsonb_agg(shown) from jsonb_array_elements(lessons_shown) shown where (shown ->> 'id') is null or not ((shown ->> 'id')::uuid = any(v_lessons))), '[]')
  where jsonb_typeof(lessons_shown) = 'array'
    and exists (select 1 from jsonb_array_elements(lessons_shown) shown where (shown ->> 'id')::uuid = any(v_lessons));
  update learning_events set reviewed_at = null
  where id = any(v_reopen) and person_id is distinct from p_person and text <> '';
  get diagnostics v_count = row_count;
  v_counts := v_counts || jsonb_build_object('learning_events_reopened', v_count);

  -- Jobs that are theirs or name them: emptied, and never relayed.
  update outbox set payload = '{}', relayed_at = coalesce(relayed_at, now()), last_error = 'the person was erased'
  where queue <> 'erase' and (person_id = p_person or payload::text like '%' || p_person::text || '%')
    and (payload <> '{}' or relayed_at is null);
  get diagnostics v_count = row_count;
  v_counts := v_counts || jsonb_build_object('outbox', v_count);

  -- Their handles: pushes of approvals to them, allowlists naming them, then the handles themselves.
  select coalesce(array_agg(channel || ':' || external_id), '{}') into v_handles from identities where person_id = p_person;
  delete from approval_pushes where channel || ':' || external_id = any(v_handles);
  update channel_bindings b set allowlist = array(select handle from unnest(b.allowlist) handle where not (b.channel || ':' || handle = any(v_handles)))
  where exists (select 1 from unnest(b.allowlist) handle where b.channel || ':' || handle = any(v_handles));
  update link_codes set used_by_identity = null where used_by_identity in (select id from identities where person_id = p_person);
  delete from identities where person_id = p_person;
  get diagnostics v_count = row_count;
  v_counts := v_counts || jsonb_build_object('identities', v_count);
  delete from link_codes where person_id = p_person;
  get diagnostics v_count = row_count;
  v_counts := v_counts || jsonb_build_object('link_codes', v_count);
  delete from login_links where person_id = p_person;
  delete from web_sessions where person_id = p_person;
  get diagnostics v_count = row_count;
  v_counts := v_counts || jsonb_build_object('web_sessions', v_count);
  delete from api_tokens where person_id = p_person;
  get diagnostics v_count = row_count;
  v_counts := v_counts || jsonb_build_object('api_tokens', v_count);

  -- The row stays, for the audit chain's person ids and the facts' tombstones; the name goes.
  update people set name = null, erased_at = now() where id = p_person;
  return v_counts;
end
$$;
revoke all on function roster_erase_person(uuid) from public;
grant execute on function roster_erase_person(uuid) to roster_ops;
