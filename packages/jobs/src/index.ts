export { handlers, type JobDependencies, type JobRun } from './handlers.js';
export { currentJob, runAsJob } from '@roster/learning';
export { connectionFromUrl, createQueues, defaultJobOptions, isJobName, jobNames, payloadSchemas, type JobName, type JobPayload, type QueueSet } from './queues.js';
export { removePersonJobs } from './person-jobs.js';
export { relayOutbox, startRelayLoop, type RelayReport } from './relay.js';
export { processJob, registerSchedulers, runJobNow, startJobWorker, type JobWorker, type JobWorkerOptions, type ScheduleOptions } from './worker.js';
