import type { Person } from '@roster/core';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startApiServer, type ApiServer, type Browser } from './api-server.js';

/**
 * What the HTTP API's test files share: the real server (createServer) over
 * the real runtime on a PGlite database, with an owner (Ada), a member (Bob)
 * and an agent (Scout), and every answer kept so that each file can check at
 * its end that none carried a stack. The bindings below are set by
 * `useApiServer`'s beforeAll.
 */
export let server: ApiServer;
export let ada: Person;
export let bob: Person;
export let owner: Browser;
export let member: Browser;
/** Every answer `call` had in this file. */
export const answers: LightMyRequestResponse[] = [];

export async function call(method: string, url: string, options: Parameters<ApiServer['request']>[2] = {}): Promise<LightMyRequestResponse> {
  const response = await server.request(method, url, options);
  answers.push(response);
  return response;
}

export function expectError(response: LightMyRequestResponse, status: number, code: string): void {
  expect(response.statusCode, response.body).toBe(status);
  const body = response.json() as { error: { code: string; message: string } };
  expect(Object.keys(body)).toEqual(['error']);
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message']);
  expect(body.error.code).toBe(code);
  expect(body.error.message.length).toBeGreaterThan(0);
}

/** Start the server and its people before this file's tests, and close it after them. */
export function useApiServer(): void {
  beforeAll(async () => {
    server = await startApiServer();
    const { directory } = server.runtime.core;
    ada = await directory.addPerson({ name: 'Ada', role: 'owner' });
    bob = await directory.addPerson({ name: 'Bob', role: 'member' });
    await directory.addAgent({ name: 'Scout', job: 'finds things' });
    owner = await server.signIn(ada);
    member = await server.signIn(bob);
  });

  afterAll(async () => {
    await server?.close();
  });
}

/**
 * The file's last test: at least `minimum` answers were had through `call`
 * (so the check below looked at something), and none carried a stack.
 */
export function answeredNoStack(minimum: number): void {
  it('answered no stack anywhere in this file', () => {
    expect(answers.length).toBeGreaterThanOrEqual(minimum);
    expect(answers.filter((answer) => answer.body.includes('"stack"') || /\n\s+at /.test(answer.body))).toEqual([]);
  });
}
