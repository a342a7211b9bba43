import type { Engine, EngineFile, EnginePart, EngineRequest, EngineResult, EngineTool, EngineToolCall, FileKind } from '@roster/contracts';
import { RosterError } from '@roster/errors';
import type { FilePart, ImagePart, LanguageModel, ModelMessage, SystemModelMessage, ToolSet } from 'ai';
import { aiSdk } from './lazy.js';

type AiSdk = typeof import('ai');

export interface AiSdkEngineOptions {
  /** The reference the engine was made from (`openai:gpt-4o-mini`); it names the engine in errors. */
  id: string;
  /**
   * A provider's model object, loaded with its client by the first turn. A
   * bare model id string is refused: the AI SDK would send it to its global
   * gateway provider, configured from the environment, and engines take
   * their keys from the caller only.
   */
  model: () => Promise<Exclude<LanguageModel, string>>;
  /** Whether the model runs on this machine (see `Engine.local`). */
  local: boolean;
  /** The kinds of file the model reads (see `Engine.accepts`); none by default. */
  accepts?: readonly FileKind[];
  /** Retries of retryable failures (429, 5xx, a dropped connection) per model call; the SDK's own retry loop. */
  maxRetries?: number;
  /** The most a whole turn may take, tool calls included. */
  timeoutMs?: number;
  /**
   * Strings never to repeat in an error message (the API key the model was
   * made with). Key-shaped tokens are scrubbed as well; this catches the rest.
   */
  secrets?: readonly string[];
}

/** Between the text of two steps (before and after a tool call), so that the streamed text and the final text agree. */
const stepSeparator = '\n\n';

/** An engine over any AI SDK language model: streaming, the tool loop, timeouts, retries and error mapping. */
export function createAiSdkEngine(options: AiSdkEngineOptions): Engine {
  const { id, model, local, accepts = [], maxRetries = 2, timeoutMs = 60_000, secrets = [] } = options;

  async function run(request: EngineRequest): Promise<EngineResult> {
    // Loaded before the turn's timeout starts, so that the load never counts against it.
    const [sdk, languageModel] = await Promise.all([aiSdk(), model()]);
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = request.signal ? AbortSignal.any([request.signal, timeout]) : timeout;
    const emit = (part: EnginePart): void => request.onPart?.(part);

    const inputs = new Map<string, unknown>();
    const toolCalls: EngineToolCall[] = [];
    let text = '';
    let step = 0;
    let lastTextStep = -1;
    let failure: unknown;
    let aborted = false;
    let usage: EngineResult['usage'];

    const maxSteps = request.maxSteps ?? 5;
    const result = sdk.streamText({
      model: languageModel,
      system: systemMessages(request),
      messages: conversation(request),
      tools: toolSet(request.tools, sdk.tool),
      // maxSteps rounds may call tools; the step after them must answer, so a turn never ends on a tool call.
      stopWhen: sdk.stepCountIs(maxSteps + 1),
      prepareStep: ({ stepNumber }) => (stepNumber >= maxSteps ? { toolChoice: 'none' } : undefined),
      maxRetries,
      abortSignal: signal,
      // Errors arrive as `error` parts below; the default handler would print them.
      onError: () => {},
    });

    try {
      for await (const part of result.fullStream) {
        switch (part.type) {
          case 'start-step':
            step += 1;
            break;
          case 'text-delta':
            if (part.text === '') break;
            if (lastTextStep !== -1 && lastTextStep !== step && !/\s$/.test(text)) {
              text += stepSeparator;
              emit({ type: 'text-delta', text: stepSeparator });
            }
            lastTextStep = step;
            text += part.text;
            emit({ type: 'text-delta', text: part.text });
            break;
          case 'tool-call':
            inputs.set(part.toolCallId, part.input);
            emit({ type: 'tool-call', toolName: part.toolName, input: part.input });
            break;
          case 'tool-result':
            toolCalls.push({ toolName: part.toolName, input: part.input, output: part.output });
            emit({ type: 'tool-result', toolName: part.toolName, output: part.output });
            break;
          case 'tool-error': {
            // Bad arguments from the model, or a tool that threw: the model is told, and so is the caller.
            const output = { error: errorText(part.error) };
            toolCalls.push({ toolName: part.toolName, input: inputs.get(part.toolCallId) ?? part.input, output });
            emit({ type: 'tool-result', toolName: part.toolName, output });
            break;
          }
          case 'finish':
            usage = usageOf(part.totalUsage);
            break;
          case 'error':
            failure ??= part.error;
            break;
          case 'abort':
            aborted = true;
            break;
          default:
            break;
        }
      }
    } catch (error) {
      failure ??= error;
    }

    if (timeout.aborted) {
      throw new RosterError('engine_timeout', scrub(`${id} did not answer within ${timeoutMs} ms: try again, or raise the timeout`, secrets), {
        cause: failure,
        retryable: true,
      });
    }
    if (request.signal?.aborted) {
      throw new RosterError('engine_aborted', scrub(`${id} was stopped by the caller before it answered`, secrets), {
        cause: request.signal.reason,
      });
    }
    if (failure !== undefined || aborted) throw engineFailure(sdk, id, failure, secrets);

    emit({ type: 'turn-end', text });
    return usage === undefined ? { text, toolCalls } : { text, toolCalls, usage };
  }

  return { id, local, accepts, readsBelowFloor: true, run };
}

/**
 * The stable prefix first and unchanged, then this turn's memory block. The
 * cache breakpoint sits on the prefix; providers other than Anthropic ignore
 * the `anthropic` options, and cache a stable prefix on their own.
 */
function systemMessages(request: EngineRequest): SystemModelMessage[] {
  const messages: SystemModelMessage[] = [
    {
      role: 'system',
      content: request.system,
      providerOptions: { anthropic: { cacheControl: { type: 'ephemeral' } } },
    },
  ];
  if (request.memory.trim() !== '') messages.push({ role: 'system', content: request.memory });
  return messages;
}

/** History as text; the current message with its files, if any, as content parts (they go with this turn only). */
function conversation(request: EngineRequest): ModelMessage[] {
  const files = request.files ?? [];
  const current: ModelMessage =
    files.length === 0
      ? { role: 'user', content: request.message }
      : { role: 'user', content: [...(request.message === '' ? [] : [{ type: 'text' as const, text: request.message }]), ...files.map(filePart)] };
  return [...request.history.map((message): ModelMessage => ({ role: message.role, content: message.content })), current];
}

/** An image as an image part (what every vision model takes); anything else as a file part with its media type. */
function filePart(file: EngineFile): ImagePart | FilePart {
  if (file.kind === 'image') return { type: 'image', image: file.data, mediaType: file.mediaType };
  return { type: 'file', data: file.data, mediaType: file.mediaType, ...(file.name === undefined ? {} : { filename: file.name }) };
}

function toolSet(tools: readonly EngineTool[], tool: AiSdk['tool']): ToolSet {
  const set: ToolSet = {};
  for (const engineTool of tools) {
    set[engineTool.name] = tool({
      description: engineTool.description,
      inputSchema: engineTool.inputSchema,
      execute: (input: unknown, { abortSignal }) =>
        engineTool.execute(input, abortSignal === undefined ? {} : { signal: abortSignal }),
    });
  }
  return set;
}

interface SdkUsage {
  inputTokens: number | undefined;
  outputTokens: number | undefined;
  inputTokenDetails?: { cacheReadTokens: number | undefined };
}

function usageOf(usage: SdkUsage): EngineResult['usage'] {
  const counted: NonNullable<EngineResult['usage']> = {};
  if (usage.inputTokens !== undefined) counted.inputTokens = usage.inputTokens;
  if (usage.outputTokens !== undefined) counted.outputTokens = usage.outputTokens;
  const cached = usage.inputTokenDetails?.cacheReadTokens;
  if (cached !== undefined) counted.cachedInputTokens = cached;
  return Object.keys(counted).length === 0 ? undefined : counted;
}

/** The last failure behind the SDK's retries, as a RosterError that says whether trying again may help. */
function engineFailure(sdk: AiSdk, id: string, error: unknown, secrets: readonly string[]): RosterError {
  const last = sdk.RetryError.isInstance(error) ? error.lastError : error;
  if (sdk.APICallError.isInstance(last)) {
    const status = last.statusCode;
    const said = last.message.trim().replace(/\.$/, '');
    const answered = status === undefined ? `could not be reached (${said})` : `answered ${status}: ${said}`;
    const message = `${id} ${answered}; ${adviceFor(status, last.isRetryable)}`;
    const storable = `${id} ${status === undefined ? 'could not be reached' : `answered ${status}`}; ${adviceFor(status, last.isRetryable)}`;
    return new RosterError('engine_failed', scrub(message, secrets), { cause: error, retryable: last.isRetryable, storable: scrub(storable, secrets) });
  }
  if (error === undefined) {
    return new RosterError('engine_failed', scrub(`${id} stopped before it answered; try again`, secrets), { retryable: true });
  }
  return new RosterError('engine_failed', scrub(`${id} failed: ${errorText(last)}`, secrets), { cause: error, storable: scrub(`${id} failed`, secrets) });
}

function adviceFor(status: number | undefined, retryable: boolean): string {
  if (status === 401 || status === 403) return 'check the API key and its permissions';
  if (status === 404) return 'check the model name and the base URL';
  if (status === 429) return 'the provider is limiting requests; try again later';
  if (retryable) return 'try again later';
  return 'check the engine reference and the request';
}

const keyShaped = /\b(?:sk|pk|rk|key)-[A-Za-z0-9_*.-]{6,}|\bBearer\s+\S+/gi;

/** Removes API keys from a provider's message: the caller's own, and anything shaped like one. */
function scrub(message: string, secrets: readonly string[]): string {
  let clean = message;
  for (const secret of secrets) {
    if (secret !== '') clean = clean.split(secret).join('[redacted]');
  }
  return clean.replace(keyShaped, '[redacted]');
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
