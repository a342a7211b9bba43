import { RosterError } from '@roster/errors';

/** The fact does not exist in this scope (it may exist in another; that is not said). */
export class FactNotFoundError extends RosterError {
  constructor(factId: string) {
    super('fact_not_found', `No fact ${factId} in this memory.`);
    this.name = 'FactNotFoundError';
  }
}

/** The operation does not apply to a fact in its current state. */
export class FactStateError extends RosterError {
  constructor(message: string) {
    super('fact_state', message);
    this.name = 'FactStateError';
  }
}

/**
 * Only a fact's current version is corrected or updated: this one was
 * replaced (changed, corrected or restated) since. `currentId` names the
 * version to act on instead.
 */
export class FactNotCurrentError extends RosterError {
  readonly currentId: string;
  constructor(action: string, factId: string, current: { id: string; trust: string }, why: string) {
    const state = ['candidate', 'active', 'verified', 'disputed'].includes(current.trust) ? '' : ` (${current.trust})`;
    super('fact_not_current', `Cannot ${action} fact ${factId}: ${why}, so it is not the current version; the current version is ${current.id}${state}.`);
    this.name = 'FactNotCurrentError';
    this.currentId = current.id;
  }
}

/** The statement matches something forgotten; only the person saying it again, explicitly, brings it back. */
export class TombstonedError extends RosterError {
  constructor() {
    super(
      'tombstoned',
      'This was forgotten at the person’s request. It is learned again only when that person says it again, explicitly, in a new message.',
    );
    this.name = 'TombstonedError';
  }
}

/** The statement was rejected before and comes from the same sources. */
export class RejectedStatementError extends RosterError {
  constructor() {
    super('rejected_statement', 'This statement was rejected before and is not admitted again from the same sources.');
    this.name = 'RejectedStatementError';
  }
}
