import type { Engine, EngineRequest, EngineResult, FileKind } from '@roster/contracts';

/**
 * `load`, called once: later calls share its promise. A rejected load is
 * forgotten, so that the next call tries again.
 */
export function loadOnce<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () => {
    loading ??= load().catch((error: unknown) => {
      loading = undefined;
      throw error;
    });
    return loading;
  };
}

/**
 * An engine whose model client (the AI SDK and a provider, about 1.6 MB of
 * source) is loaded by its first turn: a command that never asks a model
 * (listing agents, a migration, a backup) never parses it.
 */
export function lazyEngine(shape: { id: string; local: boolean; accepts: readonly FileKind[] }, load: () => Promise<Engine>): Engine {
  const engine = loadOnce(load);
  return {
    ...shape,
    readsBelowFloor: true,
    run: async (request: EngineRequest): Promise<EngineResult> => (await engine()).run(request),
  };
}
