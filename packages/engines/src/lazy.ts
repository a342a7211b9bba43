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
 * The AI SDK (about 1.6 MB of source with a provider), loaded by the first
 * engine turn or embedding batch that needs it: a command that never asks a
 * model (listing agents, a migration, a backup) never parses it.
 */
export const aiSdk = loadOnce(() => import('ai'));
