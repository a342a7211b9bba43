/**
 * The tables that hold nothing a person said and no fact about a person, so
 * they carry no row-level security. Every other table of the schema has it
 * enabled and forced, with policies (a test fails for a table that has
 * neither). Adding a table here needs a reason beside it.
 */
export const tablesWithoutContent: Readonly<Record<string, string>> = {
  agents: 'the wallet’s agents: names, job sentences and engines the owner wrote; every turn reads them to route',
  people: 'the directory: names and roles the owner entered; every turn reads them to route (an erased person’s row keeps no name, and the erase job rewrites the table)',
  embedding_models: 'which embedding models exist and their dimensions',
  conversation_marks: 'how far jobs have read each conversation: ids and times',
  refused_messages: 'a count of refused messages per channel account and day: no words, no handle',
  roster_migrations: 'the migration ledger',
  health_probe: 'one row /healthz rewrites to prove the database takes writes: a time',
  channel_leases: 'which gateway process holds each bot account: a channel, an account id, a process name and times',
  gateway_presence: 'which gateway processes stand for a channel received in parts (Discord shards): a channel, a process name and times',
  installation_key: 'the fingerprint of the installation key: 16 hex digits that tell keys apart and reveal nothing of one',
};
