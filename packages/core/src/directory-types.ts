/** What the directory holds (agents, people, bindings, identities) and what it offers. */
import type { Channel } from '@roster/contracts';

export interface Agent {
  id: string;
  name: string;
  job: string;
  instructions: string;
  engine: string;
  /** A purged agent's row stays for the audit: its memory is forgotten and its name free again. */
  status: 'active' | 'archived' | 'purged';
  createdAt: Date;
}

export interface Person {
  id: string;
  name: string;
  role: 'owner' | 'member' | 'guest';
}

/** A bot account bound to one agent (or the whole wallet), with who may talk to it. */
export interface ChannelBinding {
  channel: Channel;
  /** The bot account on that channel (`default` unless several bots share a channel). */
  account: string;
  /** The agent it serves; null: the whole wallet. */
  agent: string | null;
  policy: 'pairing' | 'allowlist' | 'open';
  /** Handles let in under `allowlist`. */
  allowlist: string[];
  /**
   * Discord server channels (by id) where every message from a person is for
   * the bot, without a mention; elsewhere in a server it answers only when
   * mentioned or replied to. Empty on other channels.
   */
  boundChannels: string[];
}

/** A handle on a channel, tied to a person. */
export interface Identity {
  personId: string;
  channel: Channel;
  externalId: string;
  displayName: string | null;
}

/**
 * Agents, people and identities: the owner's own tools. Every call runs in a
 * named admin scope, because these tables route conversations, not memory.
 */
export interface Directory {
  addAgent(input: { name: string; job: string; engine?: string; instructions?: string }): Promise<Agent>;
  listAgents(options?: { includeArchived?: boolean }): Promise<Agent[]>;
  agentByName(name: string): Promise<Agent>;
  agentById(id: string): Promise<Agent>;
  archiveAgent(name: string): Promise<Agent>;
  /** Make an archived agent active again; its memory was kept. */
  restoreAgent(name: string): Promise<Agent>;
  /** Give an agent a new name, unique without regard to case; everything it has stays keyed on its id. */
  renameAgent(name: string, newName: string): Promise<Agent>;
  /** Change an agent's job sentence or engine; its memory stays as it is. */
  updateAgent(name: string, changes: { job?: string; engine?: string }): Promise<Agent>;
  addPerson(input: { name: string; role?: Person['role'] }): Promise<Person>;
  listPeople(): Promise<Person[]>;
  /** The first owner created, or null: whom the owner's tools speak for when no person is named. */
  firstOwner(): Promise<Person | null>;
  /**
   * The first owner, made (named "owner") when the installation has none, so
   * that a fresh install just works; `created` says whether it was made now.
   */
  ensureFirstOwner(): Promise<{ person: Person; created: boolean }>;
  personByName(name: string): Promise<Person>;
  /** The person a channel handle is tied to, or null for a stranger. */
  personByIdentity(channel: Channel, externalId: string): Promise<Person | null>;
  /**
   * The owners' handles on a channel that can be reached: where the owner's
   * pending approvals are pushed. A handle marked unreachable is left out
   * until its person writes again.
   */
  ownerIdentities(channel: Channel): Promise<Array<{ person: Person; externalId: string }>>;
  /**
   * The platform refused to deliver to this handle (the person blocked the
   * bot, left, was deactivated). Returns whether a handle was marked; a
   * stranger's handle is not kept, so nothing is marked for one.
   */
  markUnreachable(channel: Channel, externalId: string): Promise<boolean>;
  /**
   * Bind a channel account to an agent (or the wallet) with an access policy:
   * `pairing` (only linked people), `allowlist` (and these handles), `open`
   * (strangers too, as guests: no memory, no tools). Replaces its earlier binding.
   */
  bindChannel(input: { channel: Channel; account?: string; agent?: string | null; policy?: ChannelBinding['policy']; allowlist?: string[] }): Promise<ChannelBinding>;
  /**
   * Set the Discord server channels (by id) in which every message is for the
   * bot, replacing the earlier ones (none: `[]`); the binding's agent and
   * policy stay as they are (a channel without a binding gets one to the
   * wallet, pairing). Each id is checked first: a wrong one changes nothing.
   */
  setBoundChannels(channel: Channel, channelIds: readonly string[], account?: string): Promise<ChannelBinding>;
  listBindings(): Promise<ChannelBinding[]>;
  /** Remove a binding: the account pairs again, and talks to the wallet. Returns whether there was one. */
  unbindChannel(channel: Channel, account?: string): Promise<boolean>;
  personById(id: string): Promise<Person>;
  /** Every channel handle tied to a person, by person. */
  listIdentities(): Promise<Identity[]>;
  /** Tie a handle to a person directly (the owner's tool); a handle tied to someone else is refused. */
  linkIdentity(personId: string, channel: Channel, externalId: string, displayName?: string): Promise<void>;
  /** A new single-use code (8 characters, one hour); at most three pending per person. */
  createLinkCode(personId: string): Promise<{ code: string; expiresAt: Date }>;
  /** Redeem a code from a channel handle; returns the person it now belongs to. */
  redeemLinkCode(code: string, channel: Channel, externalId: string, displayName?: string): Promise<Person>;
}
