/**
 * The hostile values the HTTP API is fed (tests/hostile-http.test.ts), per
 * documented route, generated with fast-check: random and oversized bodies,
 * wrong types, NUL bytes and lone surrogates, JSON nested 10,000 deep,
 * garbage in path and query, huge headers.
 */
import fc from 'fast-check';

/** A route of the OpenAPI document, as the hostile runs use it. */
export interface Route {
  method: string;
  /** The documented path, `/api/agents/{name}`. */
  path: string;
  access: 'public' | 'signed-in';
  /** The body's documented fields. */
  fields: string[];
  query: string[];
}

export interface HostileRequest {
  url: string;
  payload?: string | Buffer;
  contentType?: string;
  headers?: Record<string, string>;
}

/** Every byte percent-encoded: any string, lone surrogates included (as U+FFFD), reaches the server. */
const percentEncode = (value: string) => [...Buffer.from(value, 'utf8')].map((byte) => `%${byte.toString(16).padStart(2, '0')}`).join('');

const nastyString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ maxLength: 20 }).map((text) => `${text}\u0000${text}`),
  fc.constantFrom('\uD800', 'a\uDFFFb', '\u0000', '%00', '../../etc/passwd', "'; drop table people; --", '${jndi:ldap://x}', '<script>alert(1)</script>', '\u202Egnp.exe', '🙂'.repeat(50), ' ', ''),
  fc.integer({ min: 4_001, max: 30_000 }).map((length) => 'x'.repeat(length)),
);

const wrongType = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
);

/** A path segment no route expects: percent-encoded garbage, or an escape that decodes to no UTF-8. */
const nastySegment = fc.oneof(
  nastyString.map((value) => (value === '' ? '%20' : percentEncode(value.slice(0, 2_000)))),
  fc.constantFrom('%FF', '%C3%28', '%ED%A0%80', '%C0%AF', '%', '%zz', '%00', '..%2F..%2F', '..', '%2e%2e', 'a%00b'),
);

function fill(path: string, segment: (name: string) => string): string {
  return path.replace(/\{([A-Za-z]+)\}/g, (_match, name: string) => segment(name));
}

/** A path of the route with harmless values, for kinds that attack something else. */
function plainUrl(route: Route): string {
  return fill(route.path, (name) => (name === 'id' ? '00000000-0000-4000-8000-000000000000' : name === 'channel' ? 'discord' : 'Nobody'));
}

const fieldsOf = (route: Route) => (route.fields.length > 0 ? route.fields : ['name', 'text']);

/** Each kind of hostile request, for one route. */
export function kindsFor(route: Route): Record<string, fc.Arbitrary<HostileRequest>> {
  const url = plainUrl(route);
  const json = (value: unknown): HostileRequest => ({ url, payload: JSON.stringify(value), contentType: 'application/json' });
  const fields = fieldsOf(route);
  return {
    'random JSON': fc.jsonValue().map(json),
    'wrong types': fc.record(Object.fromEntries(fields.map((field) => [field, wrongType])), { requiredKeys: [] }).map(json),
    'hostile strings': fc.record(Object.fromEntries(fields.map((field) => [field, nastyString])), { requiredKeys: [] }).map(json),
    'deep JSON': fc.record({ depth: fc.constantFrom(1_000, 10_000), shape: fc.constantFrom('array', 'object', 'field') }).map(({ depth, shape }) => {
      const nested = shape === 'array' ? `${'['.repeat(depth)}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
      return { url, payload: shape === 'field' ? `{${JSON.stringify(fields[0])}:${nested}}` : nested, contentType: 'application/json' };
    }),
    oversized: fc.integer({ min: 64 * 1024 + 1, max: 400_000 }).map((length) => json({ [fields[0]!]: 'a'.repeat(length) })),
    'not JSON': fc.oneof(
      fc.record({
        payload: fc.oneof(fc.string({ unit: 'binary', minLength: 1 }), fc.constantFrom('{', '[1,', 'nul', '{"a":1}}', '\u0000', 'NaN', '{"a":undefined}', "{'a':1}", '\uFEFF{}')),
        contentType: fc.constant('application/json'),
      }),
      fc.record({
        payload: fc.string({ maxLength: 200 }),
        contentType: fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml', 'application/json; charset=latin1', '', 'application/', '*/*'),
      }),
    ).map((request) => ({ url, ...request })),
    'bad parameters': fc
      .record({
        segment: nastySegment,
        query: fc.array(fc.tuple(fc.oneof(fc.constantFrom(...route.query, 'all', 'limit'), fc.string({ maxLength: 10 })), nastySegment), { maxLength: 4 }),
      })
      .map(({ segment, query }) => ({
        url: `${fill(route.path, () => segment)}${query.length === 0 ? '' : `?${query.map(([key, value]) => `${percentEncode(key)}=${value}`).join('&')}`}`,
      })),
    'huge headers': fc
      .record({ length: fc.integer({ min: 8_000, max: 200_000 }), name: fc.constantFrom('x-junk', 'user-agent', 'accept-language', 'x-forwarded-for', 'referer'), fill: fc.constantFrom('a', '\u00e9', ';', ',') })
      .map(({ length, name, fill: character }) => ({ url, headers: { [name]: character.repeat(length) } })),
  };
}
