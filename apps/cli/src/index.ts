export { runCli } from './cli.js';
export { exitCode, type CommandIo } from './io.js';
