/**
 * A real Redis Cluster of three masters on loopback ports, started from the
 * machine's redis-server and redis-cli in a folder of its own, as an
 * operator would make one; nothing persists.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { until } from '@roster/channels/testing';
import { freePort } from './roster-process.js';

const run = promisify(execFile);

interface RedisClusterNode {
  port: number;
  process: ChildProcess;
}

export interface RedisCluster {
  /** REDIS_URL for Roster: the first node, the others as `node=`. */
  url: string;
  nodes: RedisClusterNode[];
  /** The node whose slots hold `key` (a queue prefix in braces hashes to one). */
  nodeFor(key: string): Promise<RedisClusterNode>;
  /** Kill -9 one node and wait for it to be gone. */
  kill(node: RedisClusterNode): Promise<void>;
  /** Start a killed node again (empty: nothing persists), and wait until the cluster is ok. */
  restart(node: RedisClusterNode): Promise<void>;
  stop(): Promise<void>;
}

/** redis-cli against one node; its answer. */
async function cli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 10_000 });
  return stdout.trim();
}

export async function startRedisCluster(): Promise<RedisCluster> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'roster-redis-cluster-'));
  const nodes: RedisClusterNode[] = [];
  const stop = async () => {
    await Promise.all(nodes.map((node) => killNode(node)));
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let index = 0; index < 3; index += 1) {
      const port = await freePort();
      fs.mkdirSync(path.join(dir, String(port)));
      nodes.push({ port, process: startNode(dir, port) });
    }
    for (const node of nodes) {
      await until(async () => (await cli(node.port, 'ping').catch(() => '')) === 'PONG', `redis-server on port ${node.port} to answer`, 20_000);
    }
    await run('redis-cli', ['--cluster', 'create', ...nodes.map((node) => `127.0.0.1:${node.port}`), '--cluster-replicas', '0', '--cluster-yes'], { timeout: 30_000 });
    for (const node of nodes) {
      await until(async () => (await cli(node.port, 'cluster', 'info')).includes('cluster_state:ok'), `the cluster to be ok on port ${node.port}`, 30_000);
    }
  } catch (error) {
    await stop();
    throw error;
  }
  const [first, ...rest] = nodes;
  return {
    url: `redis+cluster://127.0.0.1:${first!.port}?${rest.map((node) => `node=127.0.0.1:${node.port}`).join('&')}`,
    nodes,
    async nodeFor(key) {
      const slot = Number(await cli(first!.port, 'cluster', 'keyslot', key));
      // CLUSTER SHARDS would be neater; CLUSTER NODES is in every version: `<id> <ip:port@bus> <flags> … <from>-<to> …`.
      for (const line of (await cli(first!.port, 'cluster', 'nodes')).split('\n')) {
        const fields = line.trim().split(' ');
        const port = Number(fields[1]!.split('@')[0]!.split(':')[1]);
        const ranges = fields.slice(8).map((range) => range.split('-').map(Number));
        if (ranges.some(([from, to]) => slot >= from! && slot <= (to ?? from)!)) return nodes.find((node) => node.port === port)!;
      }
      throw new Error(`no node holds slot ${slot}`);
    },
    kill: killNode,
    async restart(node) {
      // Its nodes-P.conf keeps its identity and slots: it takes them back, and the others see it again.
      node.process = startNode(dir, node.port);
      for (const each of nodes) {
        await until(async () => (await cli(each.port, 'cluster', 'info').catch(() => '')).includes('cluster_state:ok'), `the cluster to be ok again on port ${each.port}`, 60_000);
      }
    },
    stop,
  };
}

function startNode(dir: string, port: number): ChildProcess {
  return spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`, '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--dir', path.join(dir, String(port))],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
}

async function killNode(node: RedisClusterNode): Promise<void> {
  if (node.process.exitCode !== null || node.process.signalCode !== null) return;
  const exited = new Promise((resolve) => node.process.once('exit', resolve));
  node.process.kill('SIGKILL');
  await exited;
}
