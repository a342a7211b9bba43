import { embedJob } from './handlers/embed.js';
import { episodesJob } from './handlers/episodes.js';
import { eraseJob } from './handlers/erase.js';
import { extractJob } from './handlers/extract.js';
import { fadeJob } from './handlers/fade.js';
import { harvestJob } from './handlers/harvest.js';
import { mirrorJob } from './handlers/mirror.js';
import { reviewJob } from './handlers/review.js';
import type { JobDependencies, JobRun } from './job-dependencies.js';
import type { JobName, JobPayload } from './queues.js';
import { vacuumJob } from './handlers/vacuum.js';
import { backupJob } from './handlers/backup.js';

export type { JobDependencies, JobRun } from './job-dependencies.js';

type Handler<N extends JobName> = (deps: JobDependencies, payload: JobPayload<N>, run: JobRun) => Promise<Record<string, unknown>>;

/** Every job's handler, one file each under handlers/; the learning jobs call `@roster/learning`. */
export const handlers: { [N in JobName]: Handler<N> } = {
  fade: fadeJob,
  harvest: harvestJob,
  mirror: mirrorJob,
  review: reviewJob,
  extract: extractJob,
  embed: embedJob,
  episodes: episodesJob,
  erase: eraseJob,
  vacuum: vacuumJob,
  backup: backupJob,
};
