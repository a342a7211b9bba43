import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { describeEngineConformance } from './conformance.js';
import { startFakeAnthropic, startFakeOpenAi, type FakeProvider } from './fake-providers.js';
import { createEngine } from './references.js';

const openaiApiKey = 'sk-test-openai-0123456789abcdef';
const anthropicApiKey = 'sk-ant-test-0123456789abcdef';
const compatibleApiKey = 'local-server-secret-0123456789';

describeEngineConformance('openai', {
  async start() {
    const fake = await startFakeOpenAi();
    return {
      fake,
      apiKey: openaiApiKey,
      createEngine: (options) => createEngine('openai:gpt-test', { openaiApiKey, openaiBaseUrl: `${fake.url}/v1`, ...options }),
    };
  },
});

describeEngineConformance('openai-compatible', {
  async start() {
    const fake = await startFakeOpenAi();
    return {
      fake,
      apiKey: compatibleApiKey,
      createEngine: (options) =>
        createEngine(`openai-compatible:${fake.url}/v1#llama-test`, { openaiCompatibleApiKey: compatibleApiKey, ...options }),
    };
  },
});

describeEngineConformance('anthropic', {
  async start() {
    const fake = await startFakeAnthropic();
    return {
      fake,
      apiKey: anthropicApiKey,
      createEngine: (options) =>
        createEngine('anthropic:claude-haiku-4-5', { anthropicApiKey, anthropicBaseUrl: `${fake.url}/v1`, ...options }),
    };
  },
});

const request = {
  system: 'You are Tess.',
  memory: 'Facts about Ada:\n- Ada drinks green tea',
  history: [],
  message: 'What do I drink?',
  tools: [],
};

describe('anthropic engine', () => {
  let fake: FakeProvider;
  beforeEach(async () => {
    fake = await startFakeAnthropic();
  });
  afterEach(async () => {
    await fake.close();
  });

  it('marks the stable prefix, and only it, as a prompt-cache breakpoint', async () => {
    fake.script({ type: 'text', chunks: ['Green tea.'] });
    const engine = createEngine('anthropic:claude-haiku-4-5', { anthropicApiKey, anthropicBaseUrl: `${fake.url}/v1` });

    await engine.run(request);

    const [sent] = fake.requests;
    expect(sent?.headers['x-api-key']).toBe(anthropicApiKey);
    expect(sent?.body.system).toEqual([
      { type: 'text', text: 'You are Tess.', cache_control: { type: 'ephemeral' } },
      { type: 'text', text: 'Facts about Ada:\n- Ada drinks green tea' },
    ]);
    expect(engine.local).toBe(false);
  });
});

describe('openai engines', () => {
  let fake: FakeProvider;
  beforeEach(async () => {
    fake = await startFakeOpenAi();
  });
  afterEach(async () => {
    await fake.close();
  });

  it('sends the OpenAI key to openai: and no key to an openai-compatible server that was given none', async () => {
    fake.script({ type: 'text', chunks: ['One.'] }, { type: 'text', chunks: ['Two.'] });

    await createEngine('openai:gpt-test', { openaiApiKey, openaiBaseUrl: `${fake.url}/v1` }).run(request);
    await createEngine(`openai-compatible:${fake.url}/v1#llama-test`, { openaiApiKey }).run(request);

    const [openai, compatible] = fake.requests;
    expect(openai?.headers.authorization).toBe(`Bearer ${openaiApiKey}`);
    expect(openai?.body.model).toBe('gpt-test');
    expect(compatible?.headers.authorization).toBeUndefined();
    expect(compatible?.body.model).toBe('llama-test');
  });

  it('leaves out an empty memory block and keeps history in order before the message', async () => {
    fake.script({ type: 'text', chunks: ['Fine.'] });

    await createEngine('openai:gpt-test', { openaiApiKey, openaiBaseUrl: `${fake.url}/v1` }).run({
      ...request,
      memory: '',
      history: [
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: 'Hello.' },
      ],
      message: 'How are you?',
    });

    expect(fake.requests[0]?.body.messages).toEqual([
      { role: 'system', content: 'You are Tess.' },
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello.' },
      { role: 'user', content: 'How are you?' },
    ]);
  });
});
