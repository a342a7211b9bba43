import { errorSchema } from '@roster/api';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Access, Viewer } from './access.js';
import { ApiError } from './errors.js';

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/** What a handler receives: its validated input and who asks. */
interface RouteInput<Params, Query, Body> {
  params: Params;
  query: Query;
  body: Body;
  /** The person signed in; set on every route but a public one. */
  viewer: Viewer;
  request: FastifyRequest;
  reply: FastifyReply;
}

/** One route of the API: its input schemas, its answer, and who may call it. */
export interface RouteDefinition<Params, Query, Body> {
  method: Method;
  /** Fastify's form: `/api/agents/:name`. */
  url: string;
  summary: string;
  access: Access;
  params?: z.ZodType<Params>;
  query?: z.ZodType<Query>;
  body?: z.ZodType<Body>;
  /** The success answer: JSON of this schema, or a stream of server-sent events. */
  response: { status: number; schema: z.ZodType; description?: string } | { status: 200; eventStream: string };
  /** Error codes this route answers beyond those of every route. */
  errors?: readonly number[];
  handle(input: RouteInput<Params, Query, Body>): Promise<unknown>;
}


const errorDescriptions: Readonly<Record<number, string>> = {
  400: 'Invalid input: the message says which field and why.',
  401: 'No session or token, or an expired one.',
  403: 'A cookie-borne change without the session’s x-csrf-token header, or a member where an owner is needed.',
  404: 'Not found (also: a member asking for another person’s memory).',
  409: 'Conflict: a name taken, an approval already decided, a fact no longer current.',
  413: 'Too long.',
  421: 'The Host header names a host this server does not answer to.',
  429: 'Too many attempts; wait.',
  500: 'The server failed; see its log.',
};

/** Describe zod's complaint in one line: each field and what is wrong with it. */
function describeIssues(where: string, error: z.ZodError): string {
  return error.issues
    .map((issue) => `${[where, ...issue.path.map(String)].join('.')}: ${issue.message}`)
    .join('; ');
}

function parse<T>(schema: z.ZodType<T> | undefined, value: unknown, where: string): T {
  if (schema === undefined) return undefined as T;
  const result = schema.safeParse(value ?? (where === 'body' ? undefined : {}));
  if (!result.success) throw new ApiError(400, 'invalid_request', describeIssues(where, result.error));
  return result.data;
}

/**
 * The API's routes, registered on Fastify and remembered for the OpenAPI
 * document: one definition gives the validation, the answer's shape and
 * the documentation, so the three cannot drift apart.
 */
export class ApiRoutes {
  private readonly definitions: Array<RouteDefinition<unknown, unknown, unknown>> = [];

  constructor(private readonly app: FastifyInstance) {}

  add<Params = undefined, Query = undefined, Body = undefined>(definition: RouteDefinition<Params, Query, Body>): void {
    this.definitions.push(definition as RouteDefinition<unknown, unknown, unknown>);
    this.app.route({
      method: definition.method,
      url: definition.url,
      config: { access: definition.access },
      handler: async (request, reply) => {
        const params = parse(definition.params, request.params, 'params');
        const query = parse(definition.query, request.query, 'query');
        const body = parse(definition.body, request.body, 'body');
        const result = await definition.handle({ params, query, body, viewer: request.viewer!, request, reply });
        if ('eventStream' in definition.response) return reply;
        // The answer is checked against its own documented schema: what leaves is what the document says.
        return reply.status(definition.response.status).send(definition.response.schema.parse(result));
      },
    });
  }

  /** The OpenAPI 3.1 document of every route added. */
  document(info: { title: string; version: string }): Record<string, unknown> {
    const paths: Record<string, Record<string, unknown>> = {};
    for (const definition of this.definitions) {
      const path = definition.url.replace(/:([A-Za-z]+)/g, '{$1}');
      const parameters = [
        ...parametersOf(definition.params, 'path'),
        ...parametersOf(definition.query, 'query'),
      ];
      const statuses = new Set<number>([...(definition.access === 'public' ? [] : [401]), ...(definition.access === 'owner' ? [403] : []), 421, 500, ...(definition.errors ?? [])]);
      if (definition.params !== undefined || definition.query !== undefined || definition.body !== undefined) statuses.add(400);
      if (definition.access !== 'public' && definition.method !== 'GET') statuses.add(403);
      const responses: Record<string, unknown> = {};
      if ('eventStream' in definition.response) {
        responses['200'] = { description: definition.response.eventStream, content: { 'text/event-stream': { schema: { type: 'string' } } } };
      } else {
        responses[String(definition.response.status)] = {
          description: definition.response.description ?? 'Success.',
          content: { 'application/json': { schema: jsonSchema(definition.response.schema, 'output') } },
        };
      }
      for (const status of [...statuses].sort()) {
        responses[String(status)] = { description: errorDescriptions[status] ?? 'An error.', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
      }
      paths[path] ??= {};
      paths[path][definition.method.toLowerCase()] = {
        summary: definition.summary,
        operationId: operationId(definition.method, definition.url),
        ...(parameters.length > 0 ? { parameters } : {}),
        ...(definition.body === undefined
          ? {}
          : { requestBody: { required: !definition.body.safeParse(undefined).success, content: { 'application/json': { schema: jsonSchema(definition.body, 'input') } } } }),
        responses,
        security: definition.access === 'public' ? [] : [{ session: [], csrf: [] }, { token: [] }],
      };
    }
    return {
      openapi: '3.1.0',
      info: { ...info, description: 'Roster’s HTTP API. Errors answer { error: { code, message } }.' },
      paths,
      components: {
        schemas: { Error: jsonSchema(errorSchema, 'output') },
        securitySchemes: {
          session: { type: 'apiKey', in: 'cookie', name: 'roster_session', description: 'The session a login link opened (POST /api/login).' },
          csrf: { type: 'apiKey', in: 'header', name: 'x-csrf-token', description: 'Required with the session cookie on every request but GET and HEAD.' },
          token: { type: 'http', scheme: 'bearer', description: 'A personal API token (rst_…), from POST /api/tokens.' },
        },
      },
    };
  }
}

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as Record<string, unknown>;
  return rest;
}

/** The parameters of an object schema, one per property. */
function parametersOf(schema: z.ZodType | undefined, place: 'path' | 'query'): Array<Record<string, unknown>> {
  if (schema === undefined) return [];
  const object = jsonSchema(schema, 'input') as { properties?: Record<string, Record<string, unknown>>; required?: string[] };
  return Object.entries(object.properties ?? {}).map(([name, property]) => {
    const { description, ...shape } = property;
    return {
      name,
      in: place,
      required: place === 'path' || (object.required ?? []).includes(name),
      schema: shape,
      ...(typeof description === 'string' ? { description } : {}),
    };
  });
}

function operationId(method: Method, url: string): string {
  const words = url
    .replace(/^\/api\//, '')
    .split(/[/:-]/)
    .filter((word) => word !== '');
  return [method.toLowerCase(), ...words.map((word) => word[0]!.toUpperCase() + word.slice(1))].join('');
}
