export { handlers, type JobDependencies, type JobRun } from './handlers.js';
export { lessonText, paraphraseSystem } from './review.js';
export { currentJob, runAsJob } from './job-context.js';
export { createApprovalDesk, type ApprovalDesk } from './approval-desk.js';
export { approveLesson, lessonTextProblem, listApprovals, listLessons, readEvidence, rejectApproval, retireLesson, type Approval, type Approver, type EvidenceEntry, type Lesson } from './lessons.js';
export { canJudge, dueCases, graduationStreak, noJudgeNotice, judgeSystem, mirrorReport, parseVerdict, passRateByDay, probeMessage, recheckDays, replayCase, type MirrorCase, type MirrorReport, type MirrorRunResult } from './mirror.js';
export { connectionFromUrl, createQueues, defaultJobOptions, isJobName, jobNames, payloadSchemas, type JobName, type JobPayload, type QueueSet } from './queues.js';
export { outboxBacklog, relayOutbox, startRelayLoop, type OutboxBacklog, type RelayReport } from './relay.js';
export { processJob, registerSchedulers, runJobNow, startJobWorker, type JobWorker, type JobWorkerOptions, type ScheduleOptions } from './worker.js';
