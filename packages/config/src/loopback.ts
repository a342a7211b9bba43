import { isIP } from 'node:net';

/**
 * Whether `host` names this machine and nothing else: `localhost`, an IPv4
 * address in 127.0.0.0/8, `::1`, or an IPv4-mapped IPv6 address of 127/8
 * (`::ffff:127.0.0.1`, also written `::ffff:7f00:1`). Brackets around an IPv6
 * address are accepted, so both a URL's `hostname` and a socket's remote
 * address can be passed as they come.
 *
 * One rule for the whole product, because it decides what may leave the
 * machine (PRIVACY=strict allows only loopback engines and embedders) and who
 * may open operator pages (Bull Board answers only on loopback). A LAN
 * address, a host name other than `localhost` and an unparseable string are
 * not loopback: a name may resolve anywhere.
 */
export function isLoopbackAddress(host: string): boolean {
  let address = host.trim().toLowerCase();
  if (address.startsWith('[') && address.endsWith(']')) {
    // Brackets belong to IPv6 addresses only.
    address = address.slice(1, -1);
    if (isIP(address) !== 6) return false;
  }
  if (address === 'localhost' || address === 'localhost.') return true;
  const version = isIP(address);
  if (version === 4) return address.split('.')[0] === '127';
  if (version !== 6) return false;
  const canonical = canonicalIPv6(address);
  if (canonical === undefined) return false;
  // WHATWG URL writes the mapped IPv4 part in hex: 127.x.y.z becomes 7fxx:yyzz.
  return canonical === '::1' || /^::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}$/.test(canonical);
}

/**
 * Whether an http(s) URL points at this machine (see `isLoopbackAddress`).
 * A string that does not parse as a URL is not loopback.
 */
export function isLoopbackUrl(url: string | URL): boolean {
  let parsed: URL;
  try {
    parsed = typeof url === 'string' ? new URL(url) : url;
  } catch {
    return false;
  }
  return isLoopbackAddress(parsed.hostname);
}

/** The compressed, lower-case form of an IPv6 address (`0:0:0:0:0:0:0:1` → `::1`), or undefined with a zone id or any other oddity. */
function canonicalIPv6(address: string): string | undefined {
  try {
    const hostname = new URL(`http://[${address}]/`).hostname;
    return hostname.slice(1, -1);
  } catch {
    return undefined;
  }
}
