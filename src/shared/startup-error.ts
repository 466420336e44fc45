/**
 * A reason the gateway cannot start that the operator can fix (a bad setting, an unreachable
 * Redis, a port in use): reported as its message alone, without a stack trace.
 */
export class StartupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}
