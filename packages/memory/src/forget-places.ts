/**
 * Every place in the database where a column can hold text, and what a
 * forget does to it. A forget must reach every copy of a person's words:
 * a column that can hold them is `erased` (and says how); any other is
 * `no-words` (and says why it cannot hold them). A test compares this list
 * with the schema, so a new table or column of text (text, json, arrays,
 * tsvector, vectors) cannot be added without deciding which it is.
 *
 * Keys are `table.column`.
 *
 * An `erased` column also keeps no planner statistics (migration 0025 sets
 * its statistics target to 0): ANALYZE would otherwise copy its most common
 * values and histogram bounds, whole sentences, into pg_statistic, where no
 * forget reaches them. The erase job clears any sample of these columns that
 * someone took by hand. A test checks the catalog against this list.
 */
export type ForgetReach = { reach: 'erased'; how: string } | { reach: 'no-words'; why: string };

const erased = (how: string): ForgetReach => ({ reach: 'erased', how });
const noWords = (why: string): ForgetReach => ({ reach: 'no-words', why });

const enumeration = noWords('one of a fixed set of values the schema checks');

export const forgetPlaces: Readonly<Record<string, ForgetReach>> = {
  // The wallet and its people: what the owner typed about agents and people, not what people said to them.
  'agents.name': noWords('the agent’s name, chosen by the owner'),
  'agents.job': noWords('the job sentence the owner wrote'),
  'agents.instructions': noWords('instructions the owner wrote'),
  'agents.engine': noWords('an engine reference'),
  'agents.status': enumeration,
  'people.name': erased('the name the owner gave a person; taken off the row when the person is erased (roster person forget)'),
  'people.role': enumeration,

  // Memory.
  'facts.content': erased('emptied on every version of the fact’s chain and on every copy with the same words'),
  'facts.search_vector': erased('generated from content, so emptied with it'),
  'facts.content_hash': erased('the hash of a forgotten version is the tombstone’s business; the row keeps no hash a guess could be checked against'),
  'facts.category': noWords('a short category label chosen by the engine or the person'),
  'facts.source_message_ids': noWords('message ids'),
  'facts.actor_kind': enumeration,
  'facts.actor_id': noWords('an actor id'),
  'facts.audience': enumeration,
  'facts.channel': enumeration,
  'facts.tool': noWords('a tool name'),
  'facts.trust': enumeration,
  'fact_embeddings.embedding': erased('deleted with the fact: a vector can be inverted into words'),
  'fact_embeddings.model': noWords('an embedding model name'),
  'fact_embeddings.audience': enumeration,
  'tombstones.content_hash': noWords('a keyed hash of the normalised words: without the installation key it proves nothing'),
  'tombstones.minhash': noWords('a keyed MinHash signature of the words'),
  'tombstones.source_message_ids': noWords('message ids'),
  'tombstones.hash_kind': enumeration,
  'memory_events.detail': noWords('ids, states and counts: never content (memory writes its events so)'),
  'memory_events.action': noWords('an action name'),
  'memory_events.actor_kind': enumeration,
  'memory_events.actor_id': noWords('an actor id'),
  'memory_events.target_kind': enumeration,
  'memory_events.target_id': noWords('a target id'),
  'memory_events.hash': noWords('the keyed audit chain'),
  'memory_events.prev_hash': noWords('the keyed audit chain'),
  'memory_events.hash_kind': enumeration,
  'installation_key.fingerprint': noWords('the fingerprint of the installation key'),
  'embedding_models.model': noWords('an embedding model name'),
  'embedding_models.index_name': noWords('an index name'),

  // Conversations.
  'messages.content': erased('emptied for the messages the fact came from, the request that asked to forget it, and every line of the person or reply to them that repeats the words, in every conversation they were in'),
  'messages.external_id': noWords('the platform’s message id'),
  'messages.role': enumeration,
  'messages.visibility': enumeration,
  'conversations.channel': enumeration,
  'conversations.external_id': noWords('the platform’s chat id'),
  'conversations.kind': enumeration,
  'conversations.mode': enumeration,
  'identities.channel': enumeration,
  'identities.external_id': erased('a handle on a channel (who, not what they said); deleted when its person is erased'),
  'identities.display_name': erased('the display name a channel reports; deleted when its person is erased'),
  'channel_inbox.event': erased('a message a gateway took and has not answered yet (its words, sender and chat): a forget leaves only a mark on the rows of the person that hold the words; deleted once answered, and when its person is erased'),
  'channel_inbox.sender': erased('the handle that sent a waiting message (who, not what they said); deleted when its person is erased'),
  'channel_inbox.channel': enumeration,
  'channel_inbox.account': noWords('a channel account id'),
  'channel_inbox.delivery_id': noWords('the platform’s id of the delivery (an update or event id)'),
  'link_codes.code': noWords('a single-use code Roster made'),
  'channel_bindings.channel': enumeration,
  'channel_bindings.account': noWords('a channel account id'),
  'channel_bindings.policy': enumeration,
  'channel_bindings.allowlist': noWords('handles allowed to talk'),
  'channel_bindings.bound_channels': noWords('Discord channel ids (digits only, a check constraint) where every message is for the bot'),
  'approval_pushes.channel': enumeration,
  'approval_pushes.external_id': noWords('the platform handle of an owner an approval was pushed to'),
  'channel_credentials.channel': enumeration,
  'channel_credentials.account': noWords('a channel account id'),
  'channel_credentials.name': noWords('the name of a credential (bot_token, signing_secret)'),
  'channel_credentials.sealed': noWords('a bot token sealed with the installation key'),
  'refused_messages.channel': enumeration,
  'channel_leases.channel': enumeration,
  'channel_leases.account': noWords('a channel account id'),
  'channel_leases.holder': noWords('the name of the gateway process holding the account (host, process id, a random suffix)'),
  'channel_leases.last_error': noWords('why a gateway let the bot account go: the platform’s error or a start failure, with the channel’s settings taken out; never a message'),
  'gateway_presence.channel': enumeration,
  'gateway_presence.holder': noWords('the name of a gateway process standing for the channel (host, process id, a random suffix)'),
  'refused_messages.account': noWords('a channel account id'),

  // The learning loop.
  'learning_events.text': erased('emptied when drawn from an erased message or repeating the words'),
  'learning_events.kind': enumeration,
  'learning_events.actor_kind': enumeration,
  'learning_events.channel': enumeration,
  'mirror_cases.text': erased('emptied when drawn from an erased message or event, or repeating the words'),
  'mirror_cases.text_hash': erased('replaced by a marker with the case id'),
  'mirror_cases.status': enumeration,
  'mirror_runs.answer': erased('emptied for every run of an erased case, and any run repeating the words'),
  'mirror_runs.reason': erased('the judge’s reason, emptied with the answer'),
  'mirror_runs.lessons_shown': erased('emptied with the answer'),
  'mirror_runs.verdict': enumeration,
  'episodes.summary': erased('emptied and marked stale when built from an erased message or repeating the words; rebuilt by a job without them'),
  'episodes.source_message_ids': noWords('message ids'),
  'approvals.text': erased('replaced by a marker; a pending approval is withdrawn'),
  'approvals.evidence': erased('emptied with the text'),
  'approvals.kind': enumeration,
  'approvals.status': enumeration,
  'approvals.proposed_by_kind': enumeration,
  'approvals.proposed_by': noWords('a job or agent name'),
  'lessons.text': erased('replaced by a marker; an active lesson is retired'),
  'lessons.text_hash': erased('replaced by a marker with the lesson id'),
  'lessons.minhash': erased('emptied'),
  'lessons.evidence': erased('emptied'),
  'lessons.retired_reason': noWords('the reason a person gave for retiring a lesson, or "forgotten"'),
  'lessons.status': enumeration,

  // Jobs.
  'outbox.payload': erased('ids and options only; any payload holding the words is emptied'),
  'outbox.last_error': erased('emptied when it holds the words'),
  'outbox.queue': enumeration,
  'outbox.name': noWords('a job name'),
  'outbox.dedupe_key': noWords('a key of ids'),

  // Credentials of the HTTP API: hashes of random tokens, never words.
  'login_links.token_hash': noWords('the SHA-256 of a random login token'),
  'web_sessions.token_hash': noWords('the SHA-256 of a random session token'),
  'api_tokens.token_hash': noWords('the SHA-256 of a random API token'),
  'api_tokens.name': noWords('a label the person chose for their token'),

  // WhatsApp's linked device: its state and its Signal keys, never a message (messages live in `messages`).
  'whatsapp_sessions.account': noWords('a channel account id'),
  'whatsapp_sessions.status': enumeration,
  'whatsapp_sessions.phone': noWords('the number of the WhatsApp account Roster is linked to, not a person’s words'),
  'whatsapp_sessions.qr_sealed': noWords('a pairing code WhatsApp issued, sealed with the installation key; cleared once linked'),
  'whatsapp_sessions.creds_sealed': noWords('the device’s keys and identity, sealed with the installation key; deleted on logout'),
  'whatsapp_keys.account': noWords('a channel account id'),
  'whatsapp_keys.kind': noWords('the kind of Signal data (pre-key, session, sender-key…)'),
  'whatsapp_keys.id': noWords('a key id: a number, or the handle or group a Signal session is with (who, not what was said)'),
  'whatsapp_keys.value_sealed': noWords('Signal key material and sync state (keys, counters, hashes: no message text), sealed with the installation key; deleted on logout'),

  'roster_migrations.name': noWords('a migration file name'),
  'roster_migrations.checksum': noWords('a migration file checksum'),
};

/** The places a forget erases words from, as `table.column`. */
export const erasedPlaces = Object.entries(forgetPlaces)
  .filter(([, place]) => place.reach === 'erased')
  .map(([column]) => column);

/**
 * Outside the database: what Roster puts in Redis. None of it may hold a
 * person's words, so a forget has nothing to erase there.
 */
export const redisPlaces: Readonly<Record<string, string>> = {
  'job data': 'ids and options only (every payload schema in @roster/jobs)',
  'job return values': 'ids, verdicts and counts (a mirror run’s reason and answer stay in mirror_runs)',
  'job failure reasons': 'an error code and a message Roster wrote, never a model’s or a person’s text; no stack trace',
  'job progress': 'counts',
};
