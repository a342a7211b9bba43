import fs from 'node:fs';
import { channelVariables } from '@roster/channel-registry';
import { environmentVariables } from '@roster/config';
import { describe, expect, it } from 'vitest';

const readme = fs.readFileSync(new URL('../README.md', import.meta.url), 'utf8');

/** The variables named in the first column of the README's configuration table. */
function documentedVariables(text: string): string[] {
  const section = text.split('## Configuration')[1]?.split('\n## ')[0] ?? '';
  return [...section.matchAll(/^\| `([A-Z][A-Z0-9_]+)` \|/gm)].map((match) => match[1]!);
}

describe('README', () => {
  it('documents exactly the variables of the config schema and of every registered channel', () => {
    const documented = documentedVariables(readme);
    expect(documented.length).toBeGreaterThan(10);
    expect([...documented].sort()).toEqual([...environmentVariables, ...Object.keys(channelVariables)].sort());
  });

  it('finds a variable missing from a table (negative control)', () => {
    const partial = '## Configuration\n| variable | example | what |\n|---|---|---|\n| `PORT` | `8420` | x |\n## Next\n';
    expect(documentedVariables(partial)).toEqual(['PORT']);
  });

  it('shows the two commands of the contract', () => {
    expect(readme).toContain('npm install && npm start');
    expect(readme).toContain('npm test');
  });
});
