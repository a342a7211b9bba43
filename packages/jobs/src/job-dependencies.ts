import type { Logger } from '@roster/config';
import type { Agent, Directory, Engine } from '@roster/core';
import type { Database } from '@roster/db';
import type { Memory } from '@roster/memory';

export interface JobDependencies {
  database: Database;
  memory: Memory;
  directory: Directory;
  engineFor: (agent: Agent) => Engine;
  /** The engine that judges mirror replays (a separate call from the agent's). */
  judgeFor: (agent: Agent) => Engine;
  logger?: Logger;
  /**
   * The nightly backup (ROSTER_BACKUP_DIR): takes one into its folder and
   * keeps the newest ROSTER_BACKUP_KEEP. Absent when backups are off.
   */
  backup?: () => Promise<{ file: string; bytes: number; tookMs: number; removed: number }>;
}

export interface JobRun {
  /** Long jobs report how far they are (BullMQ's job.updateProgress). */
  progress(value: number | Record<string, unknown>): Promise<void>;
}

/** The agents a job works on: the one named, or every active one; never a purged one. */
export async function agentsOf(deps: JobDependencies, agentId: string | undefined): Promise<Agent[]> {
  if (agentId !== undefined) {
    const agent = await deps.directory.agentById(agentId);
    // A purged agent has nothing left to learn from.
    return agent.status === 'purged' ? [] : [agent];
  }
  return deps.directory.listAgents();
}
