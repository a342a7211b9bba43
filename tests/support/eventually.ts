/**
 * Ask `check` again every `everyMs` until it returns a value other than
 * undefined, or fail naming `what` once `timeoutMs` has passed. For state
 * that another process changes and that no event announces (rows a worker
 * writes, files an erase rewrites).
 */
export async function eventually<T>(check: () => Promise<T | undefined>, what: string, timeoutMs = 30_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
