import type { Config, InstallationKey, Logger } from '@roster/config';
import { createCore, type Agent, type Core, type Engine, type TurnObserver } from '@roster/core';
import type { Database } from '@roster/db';
import { createEngine, createOfflineEngine } from '@roster/engines';
import { RosterError } from '@roster/errors';
import type { Embedder } from '@roster/contracts';
import { createMemory, type Memory } from '@roster/memory';
import { parseEmbedderReference } from './embedder.js';

export type RuntimeConfig = Pick<
  Config,
  'ROSTER_EMBEDDER' | 'PRIVACY' | 'OPENAI_API_KEY' | 'OPENAI_BASE_URL' | 'ANTHROPIC_API_KEY' | 'OLLAMA_URL'
> &
  Partial<Pick<Config, 'ROSTER_JUDGE_ENGINE'>>;

/** Everything a process needs to hold conversations. */
export interface Runtime {
  embedder: Embedder;
  memory: Memory;
  core: Core;
  engineFor(agent: Agent): Engine;
  /**
   * Refuse an engine reference that cannot be made (an unknown form, a missing
   * key, a remote engine under PRIVACY=strict) before an agent is given it.
   */
  checkEngine(reference: string, agentName?: string): Engine;
  /** The engine that judges mirror replays: ROSTER_JUDGE_ENGINE, or the agent's own. */
  judgeFor(agent: Agent): Engine;
}

export interface RuntimeOptions {
  config: RuntimeConfig;
  database: Database;
  /** The installation key (loadInstallationKey): memory keys tombstones and the audit chain with it. */
  key: InstallationKey;
  logger?: Logger;
  /** Engines by agent, for tests and embedders of Roster in other programs; the configured ones otherwise. */
  engineFor?: (agent: Agent) => Engine;
  embedder?: Embedder;
  /** The fetch engines and embedders use (a local fake of a provider, in tests). */
  fetch?: typeof fetch;
  /** Told how each turn ended (the process's metrics). */
  turnObserver?: TurnObserver;
}

/**
 * Wire memory, engines and the core from the configuration. Under
 * PRIVACY=strict an agent whose engine is not local is refused a turn, and a
 * remote embedder is refused at start.
 */
export async function createRuntime(options: RuntimeOptions): Promise<Runtime> {
  const { config } = options;
  const embedder =
    options.embedder ??
    parseEmbedderReference(config.ROSTER_EMBEDDER, {
      ...(config.OPENAI_API_KEY === undefined ? {} : { openaiApiKey: config.OPENAI_API_KEY }),
      ...(config.OPENAI_BASE_URL === undefined ? {} : { openaiBaseUrl: config.OPENAI_BASE_URL }),
      ...(config.OLLAMA_URL === undefined ? {} : { ollamaUrl: config.OLLAMA_URL }),
    });
  if (config.PRIVACY === 'strict' && !embedder.local) {
    throw new RosterError('privacy_strict', `PRIVACY=strict keeps memory on this machine, but ROSTER_EMBEDDER=${config.ROSTER_EMBEDDER} is remote. Use hashing or a local Ollama.`);
  }
  const memory = createMemory({ database: options.database, embedder, key: options.key });
  await memory.prepare();
  const engines = new Map<string, Engine>();
  const engineFor =
    options.engineFor ??
    ((agent: Agent): Engine => {
      const key = `${agent.id}:${agent.engine}`;
      let engine = engines.get(key);
      if (engine === undefined) {
        engine =
          agent.engine === 'offline'
            ? createOfflineEngine({ agentName: agent.name })
            : createEngine(agent.engine, {
                ...(config.OPENAI_API_KEY === undefined ? {} : { openaiApiKey: config.OPENAI_API_KEY }),
                ...(config.OPENAI_BASE_URL === undefined ? {} : { openaiBaseUrl: config.OPENAI_BASE_URL }),
                ...(config.ANTHROPIC_API_KEY === undefined ? {} : { anthropicApiKey: config.ANTHROPIC_API_KEY }),
                ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
              });
        if (config.PRIVACY === 'strict' && !engine.local) {
          throw new RosterError('privacy_strict', `PRIVACY=strict keeps memory-bearing calls on this machine, but ${agent.name} runs on ${agent.engine}. Give it a local engine.`);
        }
        engines.set(key, engine);
      }
      return engine;
    });
  const keys = {
    ...(config.OPENAI_API_KEY === undefined ? {} : { openaiApiKey: config.OPENAI_API_KEY }),
    ...(config.OPENAI_BASE_URL === undefined ? {} : { openaiBaseUrl: config.OPENAI_BASE_URL }),
    ...(config.ANTHROPIC_API_KEY === undefined ? {} : { anthropicApiKey: config.ANTHROPIC_API_KEY }),
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
  };
  let judge: Engine | undefined;
  const judgeFor = (agent: Agent): Engine => {
    if (config.ROSTER_JUDGE_ENGINE === undefined) return engineFor(agent);
    judge ??= createEngine(config.ROSTER_JUDGE_ENGINE, keys);
    if (config.PRIVACY === 'strict' && !judge.local) {
      throw new RosterError('privacy_strict', `PRIVACY=strict keeps memory-bearing calls on this machine, but ROSTER_JUDGE_ENGINE=${config.ROSTER_JUDGE_ENGINE} is remote.`);
    }
    return judge;
  };
  const core = createCore({
    database: options.database,
    memory,
    engineFor,
    ...(options.logger === undefined ? {} : { logger: options.logger }),
    ...(options.turnObserver === undefined ? {} : { observer: options.turnObserver }),
  });
  const checkEngine = (reference: string, agentName = 'check'): Engine => {
    const engine = engineFor({ id: 'check', name: agentName, job: 'check', instructions: '', engine: reference, status: 'active', createdAt: new Date(0) });
    // A check is no agent: its engine is not kept, else the next check would speak under this one's name.
    engines.delete(`check:${reference}`);
    return engine;
  };
  return { embedder, memory, core, engineFor, judgeFor, checkEngine };
}
export { auditHeads, replayForgets, schemaVersion, takeBackup, takeNightlyBackup, type ReplayReport, type TakeBackupOptions } from './backup.js';
