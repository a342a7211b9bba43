import { z } from 'zod';
import { time } from './common.js';

export const bindingSchema = z.object({
  account: z.string(),
  agent: z.string().nullable(),
  policy: z.enum(['pairing', 'allowlist', 'open']),
  allowlist: z.array(z.string()),
});

/** Which credentials a channel takes, and where each comes from: never their values. */
export const channelCredentialSchema = z.object({
  name: z.string(),
  label: z.string(),
  variable: z.string(),
  source: z.enum(['environment', 'stored', 'unset']).describe('environment: the variable is set and wins; stored: entered on the page or with roster channel add; unset.'),
  updatedAt: time.nullable(),
});

/** Who receives a configured bot account, or why nobody does. */
export const channelAccountSchema = z.object({
  account: z.string(),
  state: z.enum(['receiving', 'standby', 'failing']),
  holder: z.string().nullable().describe('host:pid:id of the process that receives it (or last did)'),
  since: time.nullable(),
  detail: z.string(),
});

export const channelSchema = z.object({
  channel: z.string(),
  /** How people write it (`Telegram`), and what serving it takes: from its plugin. */
  label: z.string(),
  summary: z.string(),
  /** The channel links by a code a phone scans (a linked device) rather than by a token. */
  linkable: z.boolean(),
  configured: z.boolean(),
  detail: z.string(),
  accounts: z
    .array(channelAccountSchema)
    .describe('Each configured bot account: receiving (by which process, since when), standby (a gateway of this process waits; another receives it), or failing and why (nobody receives it).'),
  credentials: z.array(channelCredentialSchema),
  bindings: z.array(bindingSchema),
});

/** A channel's link (a device a phone pairs with a code it scans): its state, the code while one waits, and what to do. */
export const channelLinkSchema = z.object({
  channel: z.string(),
  account: z.string(),
  configured: z.boolean().describe('Whether the gateway serves this channel (its variables set).'),
  setup: z.string().describe('What serving it takes, or that it is served.'),
  status: z.enum(['not_linked', 'waiting_for_scan', 'linked', 'reconnecting', 'logged_out']),
  who: z.string().nullable().describe('Who is linked (a phone number); kept after a logout, to say which to link again.'),
  codeSvg: z.string().nullable().describe('While waiting for a scan: the current code, an SVG image. It changes about every 20 seconds.'),
  updatedAt: time.nullable(),
  detail: z.string().describe('What to do, in words.'),
});

export type ChannelBinding = z.output<typeof bindingSchema>;
export type ChannelCredential = z.output<typeof channelCredentialSchema>;
export type ChannelStatus = z.output<typeof channelSchema>;
export type ChannelAccount = z.output<typeof channelAccountSchema>;
export type ChannelLink = z.output<typeof channelLinkSchema>;
