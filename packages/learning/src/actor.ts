import { AsyncLocalStorage } from 'node:async_hooks';

const running = new AsyncLocalStorage<{ job: string }>();

/** Run `fn` as the job `name`: code inside knows no person is present. */
export function runAsJob<T>(name: string, fn: () => Promise<T>): Promise<T> {
  return running.run({ job: name }, fn);
}

/** The job this code runs in, if any. Approvals refuse to proceed inside one. */
export function currentJob(): string | undefined {
  return running.getStore()?.job;
}
