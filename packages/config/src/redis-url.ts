/**
 * Where Roster's Redis is, read from REDIS_URL: one server
 * (`redis://[user:password@]host:port[/db]`, `rediss://` for TLS) or a Redis
 * Cluster (`redis+cluster://[user:password@]host:port[?node=host:port&node=…]`,
 * `rediss+cluster://` for TLS). A cluster needs only one node that answers to
 * find the others; each `node` is one more to start from when the first is down.
 */
export type RedisTarget =
  | { kind: 'server'; host: string; port: number; username?: string; password?: string; db?: number; tls: boolean }
  | { kind: 'cluster'; nodes: Array<{ host: string; port: number }>; username?: string; password?: string; tls: boolean };

/** The URL protocols REDIS_URL may have. */
export const redisProtocols = ['redis:', 'rediss:', 'redis+cluster:', 'rediss+cluster:'] as const;

/** Read a REDIS_URL; throws with what is wrong (never echoing the password). */
export function parseRedisUrl(value: string): RedisTarget {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error('not a URL; expected redis://host:port or redis+cluster://host:port?node=host:port');
  }
  if (!(redisProtocols as readonly string[]).includes(url.protocol)) throw new Error(`the protocol ${url.protocol} is not one of ${redisProtocols.join(', ')}`);
  const credentials = {
    ...(url.username === '' ? {} : { username: decodeURIComponent(url.username) }),
    ...(url.password === '' ? {} : { password: decodeURIComponent(url.password) }),
  };
  const tls = url.protocol.startsWith('rediss');
  const host = unbracket(url.hostname);
  if (host === '') throw new Error('the URL names no host');
  if (url.protocol.endsWith('+cluster:')) {
    if (url.pathname.length > 1) throw new Error('a Redis Cluster has only database 0; remove the path');
    const nodes = [{ host, port: Number(url.port || 6379) }, ...url.searchParams.getAll('node').map(parseNode)];
    return { kind: 'cluster', nodes, ...credentials, tls };
  }
  const db = url.pathname.length > 1 ? Number(url.pathname.slice(1)) : undefined;
  if (db !== undefined && !(Number.isInteger(db) && db >= 0)) throw new Error('the path must be a database number');
  return { kind: 'server', host, port: Number(url.port || 6379), ...credentials, ...(db === undefined ? {} : { db }), tls };
}

function parseNode(value: string): { host: string; port: number } {
  const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(value);
  const port = Number(match?.[2]);
  if (match === null || port < 1 || port > 65_535) throw new Error(`node=${value} is not host:port`);
  return { host: unbracket(match[1]!), port };
}

/** An IPv6 address as a client connects to it: without the URL's brackets. */
function unbracket(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/** True when the value is a REDIS_URL Roster can use. */
export function isRedisUrl(value: string): boolean {
  try {
    parseRedisUrl(value);
    return true;
  } catch {
    return false;
  }
}
