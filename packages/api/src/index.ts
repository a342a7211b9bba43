/**
 * The HTTP API's answers: the zod schemas the server validates its answers
 * with and documents at /api/openapi.json, and the types the page reads them
 * as. One definition, so that the page cannot drift from the server.
 */
export * from './agents.js';
export * from './channels.js';
export * from './chat.js';
export * from './common.js';
export * from './export.js';
export * from './learning.js';
export * from './memory.js';
export * from './people.js';
