import { RosterError } from '@roster/errors';
import { describe, expect, it } from 'vitest';
import { createEngine } from './references.js';

function failureOf(make: () => unknown): RosterError {
  try {
    make();
  } catch (error) {
    if (RosterError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected createEngine to throw');
}

describe('createEngine', () => {
  it('makes the offline engine, local, introducing itself by the agent name', async () => {
    const engine = createEngine('offline', { agentName: 'Tess' });

    expect(engine.id).toBe('offline');
    expect(engine.local).toBe(true);
    const result = await engine.run({ system: '', memory: '', history: [], message: 'remember that x', tools: [] });
    expect(result.text).toBe("I'm Tess. I can't keep memories in this conversation.");
  });

  it('names the option and the variable when a key is missing', () => {
    const openai = failureOf(() => createEngine('openai:gpt-4o-mini', {}));
    const anthropic = failureOf(() => createEngine('anthropic:claude-haiku-4-5', { openaiApiKey: 'sk-not-this-one' }));

    expect(openai.code).toBe('engine_key_missing');
    expect(openai.message).toBe('openai:gpt-4o-mini needs an API key: pass openaiApiKey or set OPENAI_API_KEY');
    expect(anthropic.code).toBe('engine_key_missing');
    expect(anthropic.message).toBe('anthropic:claude-haiku-4-5 needs an API key: pass anthropicApiKey or set ANTHROPIC_API_KEY');
  });

  it.each(['gpt-4o-mini', 'openai:', 'anthropic: ', 'mistral:large', 'openai-compatible:http://127.0.0.1:11434/v1', 'openai-compatible:not a url#llama', 'openai-compatible:file:///tmp/x#llama', 'openai-compatible:http://127.0.0.1:11434/v1#'])(
    'refuses %j, listing the forms it knows',
    (reference) => {
      const error = failureOf(() => createEngine(reference, { openaiApiKey: 'sk-x', anthropicApiKey: 'sk-ant-x' }));

      expect(error.code).toBe('engine_unknown');
      expect(error.message).toContain(JSON.stringify(reference));
      expect(error.message).toContain('offline, openai:<model>, anthropic:<model>, openai-compatible:<base-url>#<model>');
    },
  );

  it('calls an engine local only when it runs on this machine', () => {
    const local = (reference: string) =>
      createEngine(reference, { openaiApiKey: 'sk-x', anthropicApiKey: 'sk-ant-x', openaiBaseUrl: 'http://127.0.0.1:1/v1' }).local;

    expect(local('openai-compatible:http://127.0.0.1:11434/v1#llama3.2')).toBe(true);
    expect(local('openai-compatible:http://localhost:1234/v1#qwen')).toBe(true);
    expect(local('openai-compatible:http://[::1]:8000/v1#mistral')).toBe(true);
    expect(local('openai-compatible:http://192.168.1.20:11434/v1#llama3.2')).toBe(false);
    expect(local('openai-compatible:https://api.together.xyz/v1#meta-llama/Llama-3-8b')).toBe(false);
    expect(local('openai:gpt-4o-mini')).toBe(false);
    expect(local('anthropic:claude-haiku-4-5')).toBe(false);
  });

  it('keeps the reference as the engine id, and the model name whole after the last #', () => {
    const reference = 'openai-compatible:http://127.0.0.1:11434/v1#hf.co/org/model:Q4#k';
    expect(createEngine(reference).id).toBe(reference);
  });

  it('refuses credentials in an openai-compatible base URL without repeating them', () => {
    const error = failureOf(() => createEngine('openai-compatible:http://ada:s3cret-pass@127.0.0.1:11434/v1#llama'));

    expect(error.code).toBe('engine_unknown');
    expect(error.message).toBe(
      'The openai-compatible base URL for 127.0.0.1:11434 carries credentials: remove them and pass openaiCompatibleApiKey',
    );
  });
});
