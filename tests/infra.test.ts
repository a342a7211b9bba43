import { readFileSync } from 'node:fs';
import { channelVariables } from '@roster/channel-registry';
import { environmentVariables } from '@roster/config';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

// The production files under infra/ may only set variables that Roster reads:
// a misspelt or retired name there is silently ignored at run time.

const known: ReadonlySet<string> = new Set([...environmentVariables, ...Object.keys(channelVariables)]);
const processes = ['server', 'worker', 'gateway'] as const;

function readRepositoryFile(relative: string): string {
  return readFileSync(new URL(`../${relative}`, import.meta.url), 'utf8');
}

/** The names among `names` that the config schema does not know. */
function unknownVariables(names: Iterable<string>): string[] {
  return [...names].filter((name) => !known.has(name)).sort();
}

type Environment = Record<string, string>;

/**
 * The environment of each service built from the Roster Dockerfile (not the
 * postgres or redis images), anchors and `<<` merges resolved.
 */
function composeEnvironments(text: string): Map<string, Environment> {
  const document = parse(text, { merge: true }) as { services?: Record<string, Record<string, unknown>> };
  const environments = new Map<string, Environment>();
  for (const [name, service] of Object.entries(document.services ?? {})) {
    if (service.build === undefined) continue;
    environments.set(name, environmentOf(service.environment));
  }
  return environments;
}

/** A compose `environment:` as a map, from either its map or its `NAME=value` list form. */
function environmentOf(value: unknown): Environment {
  const environment: Environment = {};
  if (Array.isArray(value)) {
    for (const entry of value) {
      const [name = '', ...rest] = String(entry).split('=');
      environment[name] = rest.join('=');
    }
  } else if (value !== null && typeof value === 'object') {
    for (const [name, entry] of Object.entries(value)) environment[name] = entry === null ? '' : String(entry);
  }
  return environment;
}

/** The names a systemd unit sets with `Environment=` (one or more assignments a line, quoted or not). */
function systemdVariables(text: string): Set<string> {
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    const match = /^\s*Environment\s*=\s*(.*)$/.exec(line);
    if (match === null) continue;
    for (const assignment of (match[1] ?? '').matchAll(/(?:^|\s)["']?([A-Za-z_][A-Za-z0-9_]*)=/g)) {
      names.add(assignment[1] ?? '');
    }
  }
  return names;
}

/** The names an env file lists, set (`NAME=`) or commented out (`# NAME=`). */
function envFileVariables(text: string): Set<string> {
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    const match = /^\s*(?:#\s*)?([A-Z][A-Z0-9_]*)=/.exec(line);
    if (match !== null) names.add(match[1] ?? '');
  }
  return names;
}

/** The names a Dockerfile sets with `ENV`, in both `ENV A=1 B=2` and legacy `ENV A 1` forms. */
function dockerfileVariables(text: string): Set<string> {
  const names = new Set<string>();
  const instructions = text
    .replace(/\\\r?\n/g, ' ')
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('#'));
  for (const instruction of instructions) {
    const match = /^\s*ENV\s+(.*)$/i.exec(instruction);
    if (match === null) continue;
    const body = (match[1] ?? '').trim();
    if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(body)) {
      for (const assignment of body.matchAll(/(?:^|\s)([A-Za-z_][A-Za-z0-9_]*)=/g)) names.add(assignment[1] ?? '');
    } else {
      names.add(body.split(/\s+/)[0] ?? '');
    }
  }
  return names;
}

const compose = composeEnvironments(readRepositoryFile('infra/compose.yaml'));
const units = new Map(processes.map((name) => [name, readRepositoryFile(`infra/systemd/roster-${name}.service`)]));
const envExample = envFileVariables(readRepositoryFile('infra/systemd/roster.env.example'));
const dockerfile = dockerfileVariables(readRepositoryFile('infra/Dockerfile'));

describe('the parsers', () => {
  it('report a compose variable the schema does not know, through an anchor merge, and skip other images', () => {
    const text = [
      'x-roster-env: &roster-env',
      '  DATABASE_URL: postgres://roster:roster@postgres:5432/roster',
      'services:',
      '  postgres:',
      '    image: pgvector/pgvector:pg17',
      '    environment:',
      '      POSTGRES_USER: roster',
      '  worker:',
      '    build: { context: .., dockerfile: infra/Dockerfile }',
      '    environment:',
      '      <<: *roster-env',
      '      NOT_A_ROSTER_VARIABLE: "1"',
      '  gateway:',
      '    build: ..',
      '    environment:',
      '      - REDIS_URL=redis://redis:6379',
      '',
    ].join('\n');
    const environments = composeEnvironments(text);
    expect([...environments.keys()]).toEqual(['worker', 'gateway']);
    expect(Object.keys(environments.get('worker') ?? {}).sort()).toEqual(['DATABASE_URL', 'NOT_A_ROSTER_VARIABLE']);
    expect(environments.get('gateway')).toEqual({ REDIS_URL: 'redis://redis:6379' });
    const names = [...environments.values()].flatMap((environment) => Object.keys(environment));
    expect(unknownVariables(names)).toEqual(['NOT_A_ROSTER_VARIABLE']);
  });

  it('report unknown names from systemd units, env files and Dockerfiles', () => {
    const unit = ['[Service]', 'Environment=NODE_ENV=production "NOT_A_UNIT_VARIABLE=a b"', 'ExecStart=/bin/true', ''].join('\n');
    expect(unknownVariables(systemdVariables(unit))).toEqual(['NOT_A_UNIT_VARIABLE']);
    const envFile = ['# A comment that mentions NOTHING here', 'REDIS_URL=redis://127.0.0.1:6379', '# NOT_AN_ENV_VARIABLE=1', ''].join('\n');
    expect(unknownVariables(envFileVariables(envFile))).toEqual(['NOT_AN_ENV_VARIABLE']);
    const docker = ['FROM node:20', 'ENV NODE_ENV=production \\', '    NOT_A_DOCKER_VARIABLE=1', 'ENV LEGACY_FORM value', '# ENV COMMENTED=1', ''].join('\n');
    expect(unknownVariables(dockerfileVariables(docker))).toEqual(['LEGACY_FORM', 'NOT_A_DOCKER_VARIABLE']);
  });
});

describe('infra/compose.yaml', () => {
  it('sets the database, Redis and secret key on every Roster service', () => {
    expect([...compose.keys()].sort()).toEqual([...processes].sort());
    for (const name of processes) {
      expect(Object.keys(compose.get(name) ?? {})).toEqual(
        expect.arrayContaining(['DATABASE_URL', 'REDIS_URL', 'ROSTER_SECRET_KEY', 'ROSTER_DATA_DIR', 'NODE_ENV']),
      );
    }
  });

  it('sets only variables that Roster reads', () => {
    for (const [name, environment] of compose) {
      expect({ service: name, unknown: unknownVariables(Object.keys(environment)) }).toEqual({ service: name, unknown: [] });
    }
  });

  it('takes ROSTER_SECRET_KEY from the environment, never as a literal value', () => {
    for (const [name, environment] of compose) {
      expect({ service: name, value: environment.ROSTER_SECRET_KEY }).toEqual({
        service: name,
        value: expect.stringMatching(/^\$\{ROSTER_SECRET_KEY(?:[:?-][^}]*)?\}$/),
      });
    }
  });
});

describe('infra/systemd', () => {
  it('runs each process with its own command, NODE_ENV and ROSTER_DATA_DIR', () => {
    for (const [name, unit] of units) {
      expect(unit).toMatch(new RegExp(`^ExecStart=/usr/bin/node /opt/roster/apps/cli/bin/roster\\.js ${name}$`, 'm'));
      expect([...systemdVariables(unit)].sort()).toEqual(['NODE_ENV', 'ROSTER_DATA_DIR']);
    }
  });

  it('sets only variables that Roster reads, and keeps secrets out of the units', () => {
    for (const [name, unit] of units) {
      expect({ unit: name, unknown: unknownVariables(systemdVariables(unit)) }).toEqual({ unit: name, unknown: [] });
      expect(systemdVariables(unit).has('ROSTER_SECRET_KEY')).toBe(false);
    }
  });

  it('lists in roster.env.example only variables that Roster reads, the required ones among them', () => {
    expect([...envExample]).toEqual(expect.arrayContaining(['DATABASE_URL', 'REDIS_URL', 'ROSTER_SECRET_KEY']));
    expect(unknownVariables(envExample)).toEqual([]);
  });
});

describe('infra/Dockerfile', () => {
  it('sets only variables that Roster reads', () => {
    expect([...dockerfile]).toEqual(expect.arrayContaining(['NODE_ENV', 'ROSTER_DATA_DIR']));
    expect(unknownVariables(dockerfile)).toEqual([]);
  });
});
