#!/usr/bin/env node
// The `roster` command. The TypeScript sources build to dist/ on `npm install`.
import { existsSync } from 'node:fs';

const entry = new URL('../dist/main.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write('Roster is not built yet: run `npm install` (or `npm run build`) in the repository root.\n');
  process.exit(1);
}
await import(entry.href);
