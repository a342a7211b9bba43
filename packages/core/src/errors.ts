import { RosterError } from '@roster/errors';

/** A named thing (agent, person) does not exist. */
export class NotFoundError extends RosterError {
  constructor(code: 'agent_not_found' | 'person_not_found' | 'approval_not_found', message: string) {
    super(code, message);
    this.name = 'NotFoundError';
  }
}

/** Input the core refuses; nothing was changed. */
export class InvalidInputError extends RosterError {
  constructor(message: string) {
    super('invalid_input', message);
    this.name = 'InvalidInputError';
  }
}
