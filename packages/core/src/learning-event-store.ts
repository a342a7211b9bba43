/** Learning events are written by `@roster/learning`, their one writer; the core records a turn's signals through it. */
export { LearningEventStore } from '@roster/learning';
