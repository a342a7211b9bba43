import { runCli } from './cli.js';

const stopSignal = new Promise<string>((resolve) => {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => resolve(signal));
});

const code = await runCli(process.argv.slice(2), {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
  env: process.env,
  stopSignal,
});
process.exitCode = code;
// Long-running parts have stopped by now; do not wait on stray handles.
setImmediate(() => process.exit(code));
