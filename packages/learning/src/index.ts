export { currentJob, runAsJob } from './actor.js';
export { createApprovalDesk, type AgentNames, type ApprovalDesk } from './approval-desk.js';
export { listApprovals, proposeApproval, type Approval, type Approver } from './approvals.js';
export { LearningEventStore, type LearningEventKind } from './events.js';
export { readEvidence, type EvidenceEntry } from './evidence.js';
export { harvestCorrections } from './harvest.js';
export { approveLesson, lessonTextProblem, listLessons, rejectApproval, retireLesson, type Lesson } from './lessons.js';
export {
  canJudge,
  dueCases,
  graduationStreak,
  judgeSystem,
  mirrorReport,
  noJudgeNotice,
  parseVerdict,
  passRateByDay,
  probeMessage,
  recheckDays,
  replayCase,
  type MirrorAgent,
  type MirrorCase,
  type MirrorOptions,
  type MirrorPerson,
  type MirrorReport,
  type MirrorRunResult,
} from './mirror.js';
export { lessonText, paraphraseSystem, reviewAgent, type ReviewOptions } from './review.js';
