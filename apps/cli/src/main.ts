import { runCli } from './cli.js';

/** After the first stop signal, the parts get this long to stop cleanly (finish a turn, close connections); then the process ends anyway. */
const stopWithinMs = 9_000;
/**
 * A gateway still answering the messages it has taken (the platform will not
 * send them again) holds the end this much longer at most.
 */
const answeringWithinMs = 25_000;
const holds: Array<() => boolean> = [];
const signalNumbers = { SIGINT: 2, SIGTERM: 15 } as const;

let stopping = false;
const stopSignal = new Promise<string>((resolve) => {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (stopping) {
        // A second signal: the person means it. Transactions not yet committed are rolled back by the database.
        process.stderr.write(`Stopping at once (${signal} again).\n`);
        process.exit(128 + signalNumbers[signal]);
      }
      stopping = true;
      const startedAt = Date.now();
      const end = () => {
        if (holds.some((answering) => answering()) && Date.now() - startedAt < answeringWithinMs) {
          setTimeout(end, 250).unref();
          return;
        }
        const waited = Math.round((Date.now() - startedAt) / 1000);
        process.stderr.write(`Some parts did not stop within ${waited} s (Redis or the database not answering?); ending now. Nothing committed is lost.\n`);
        process.exit(1);
      };
      setTimeout(end, stopWithinMs).unref();
      resolve(signal);
    });
  }
});

const code = await runCli(process.argv.slice(2), {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
  env: process.env,
  stopSignal,
  holdStopWhile: (answering) => void holds.push(answering),
});
process.exitCode = code;
// Long-running parts have stopped by now; do not wait on stray handles.
setImmediate(() => process.exit(code));
