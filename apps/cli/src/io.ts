/** Where a command writes: results on `out`, human notes and errors on `err`. */
export interface CommandIo {
  out: (text: string) => void;
  err: (text: string) => void;
  /** The environment the command was started with; parsed once into a Config. */
  env: Readonly<Record<string, string | undefined>>;
  /** Resolves when the process is asked to stop (SIGINT, SIGTERM). */
  stopSignal: Promise<string>;
  /**
   * While `answering` says so, the process's stop deadline waits on (up to a
   * longer bound): a gateway finishing the messages it has taken.
   */
  holdStopWhile?(answering: () => boolean): void;
}

/** Exit codes: 0 success, 1 failure, 2 usage error, 130 stopped by Ctrl-C (128 + SIGINT), as shells report it. */
export const exitCode = { ok: 0, failure: 1, usage: 2, interrupted: 130 } as const;
