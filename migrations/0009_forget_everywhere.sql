-- Forget reaches every copy. One normal form of text for SQL and
-- JavaScript (packages/memory/src/text.ts normalizeText): NFKC, lower case,
-- accents taken off, every run of what is neither letter nor digit one space.
create function roster_normalize(p_text text) returns text
language sql immutable parallel safe
as $$
  select trim(regexp_replace(
    regexp_replace(normalize(lower(normalize(coalesce(p_text, ''), NFKC)), NFD), '[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]+', '', 'g'),
    '[^[:alnum:]]+', ' ', 'g'))
$$;
grant execute on function roster_normalize(text) to roster_app, roster_ops;

-- Whether a normalised text holds one of the normalised phrases as whole words.
create function roster_holds_phrase(p_text text, p_phrases text[]) returns boolean
language sql immutable parallel safe
as $$
  select exists (
    select 1 from unnest(p_phrases) phrase
    where length(phrase) > 0 and position(' ' || phrase || ' ' in ' ' || roster_normalize(p_text) || ' ') > 0
  )
$$;
grant execute on function roster_holds_phrase(text, text[]) to roster_app, roster_ops;

-- Whether an approval's or a lesson's evidence cites one of these messages or learning events.
create function roster_evidence_cites(p_evidence jsonb, p_message_ids uuid[], p_event_ids uuid[]) returns boolean
language sql immutable parallel safe
as $$
  select exists (
    select 1 from jsonb_array_elements(p_evidence) e
    where (e->>'messageId')::uuid = any(p_message_ids) or (e->>'eventId')::uuid = any(p_event_ids)
  )
$$;

-- Erase the words of a forgotten fact from every place that may hold a copy,
-- for the scope's person: the messages it came from and the request that
-- asked to forget it, any line of theirs or any agent's reply to them that
-- repeats it (in every conversation they were in: every agent of a team
-- heard it), learning events, mirror cases and their runs, episodes,
-- approvals, lessons (an active one built from it is retired and its text
-- erased) and outbox rows. Runs as the owner, bound to the scope's person.
-- Returns how many rows each place lost the words in.
create function roster_forget_everywhere(p_message_ids uuid[], p_phrases text[])
returns jsonb
language plpgsql
security definer
set search_path = public, pg_temp
as $$
declare
  v_agent uuid := roster_scope_agent();
  v_person uuid := roster_scope_person();
  v_erased uuid[];
  v_events uuid[];
  v_cases uuid[];
  v_counts jsonb := '{}';
  v_count integer;
begin
  if v_agent is null then
    raise exception 'roster_forget_everywhere needs a scope' using errcode = '42501';
  end if;

  -- Messages: those named, if they are this person's or this agent's, and
  -- any line of the person, or reply to them, that repeats the words.
  with reach as (
    select c.id from conversations c
    where (c.kind = 'dm' and c.person_id = v_person)
       or exists (select 1 from messages x where x.conversation_id = c.id and x.person_id = v_person)
       or c.id in (select conversation_id from messages where id = any(p_message_ids))
  ), targets as (
    select m.id from messages m
    where (m.id = any(p_message_ids) and (m.person_id is not distinct from v_person or m.agent_id = v_agent))
       or (m.conversation_id in (select id from reach)
           and (m.person_id = v_person or (m.role = 'agent' and (m.person_id = v_person or m.visibility = 'conversation')))
           and roster_holds_phrase(m.content, p_phrases))
  ), erased as (
    update messages set content = '', forgotten_at = coalesce(forgotten_at, now())
    where id in (select id from targets)
    returning id
  )
  select coalesce(array_agg(id), '{}') into v_erased from erased;
  v_counts := v_counts || jsonb_build_object('messages', coalesce(array_length(v_erased, 1), 0));

  -- Learning events of this person, with any agent, drawn from those messages or repeating the words.
  with erased as (
    update learning_events set text = ''
    where person_id is not distinct from v_person and text <> ''
      and (message_id = any(v_erased) or message_id = any(p_message_ids) or roster_holds_phrase(text, p_phrases))
    returning id
  )
  select coalesce(array_agg(id), '{}') into v_events from erased;
  v_counts := v_counts || jsonb_build_object('learning_events', coalesce(array_length(v_events, 1), 0));

  -- Mirror cases drawn from them, and every run of those cases; runs of this person's cases that repeat the words.
  with erased as (
    update mirror_cases set text = '', text_hash = 'forgotten:' || id::text
    where person_id is not distinct from v_person
      and (source_message_id = any(v_erased) or source_event_id = any(v_events) or (text <> '' and roster_holds_phrase(text, p_phrases)))
    returning id
  )
  select coalesce(array_agg(id), '{}') into v_cases from erased;
  v_counts := v_counts || jsonb_build_object('mirror_cases', coalesce(array_length(v_cases, 1), 0));
  update mirror_runs set answer = '', reason = '', lessons_shown = '[]'
  where case_id = any(v_cases)
     or (person_id is not distinct from v_person
         and (roster_holds_phrase(answer, p_phrases) or roster_holds_phrase(reason, p_phrases) or roster_holds_phrase(lessons_shown::text, p_phrases)));
  get diagnostics v_count = row_count;
  v_counts := v_counts || jsonb_build_object('mirror_runs', v_count);

  -- Episodes built from an erased message, or repeating the words: erased at once, rebuilt by a job.
  update episodes set summary = '', stale = true, updated_at = now()
  where source_message_ids && v_erased or source_message_ids && p_message_ids
     or ((person_id is not distinct from v_person or person_id is null) and agent_id = v_agent and roster_holds_phrase(summary, p_phrases));
  get diagnostics v_count = row_count;
  v_counts := v_counts || jsonb_build_object('episodes', v_count);

  -- Approvals and lessons whose text or evidence came from them. A pending
  -- approval is withdrawn; an active lesson is retired; the text is erased.
  update approvals set text = '[forgotten]', evidence = '[]', status = case when status = 'pending' then 'rejected' else status end
  where (agent_id = v_agent or person_id = v_person)
    and text <> '[forgotten]'
    and (roster_holds_phrase(text, p_phrases) or roster_evidence_cites(evidence, v_erased, v_events));
  get diagnostics v_count = row_count;
  v_counts := v_counts || jsonb_build_object('approvals', v_count);
  update lessons set text = '[forgotten: built from words a person asked to forget]', text_hash = 'forgotten:' || id::text,
         minhash = '{}', evidence = '[]', status = 'retired', retired_at = coalesce(retired_at, now()), retired_reason = 'forgotten'
  where (agent_id = v_agent or person_id = v_person)
    and text_hash not like 'forgotten:%'
    and (roster_holds_phrase(text, p_phrases) or roster_evidence_cites(evidence, v_erased, v_events));
  get diagnostics v_count = row_count;
  v_counts := v_counts || jsonb_build_object('lessons', v_count);

  -- Jobs not yet relayed carry ids; any that holds the words loses them.
  update outbox set payload = '{}', last_error = null
  where agent_id = v_agent and (roster_holds_phrase(payload::text, p_phrases) or roster_holds_phrase(last_error, p_phrases));
  get diagnostics v_count = row_count;
  v_counts := v_counts || jsonb_build_object('outbox', v_count);

  return v_counts;
end
$$;
revoke all on function roster_forget_everywhere(uuid[], text[]) from public;
grant execute on function roster_forget_everywhere(uuid[], text[]) to roster_app, roster_ops;

-- roster_forget_everywhere replaces it: the transcript alone is no longer the reach of a forget.
drop function roster_forget_messages(uuid[], text);
