import type { HistoryMessage, Session } from './session';

/** DI token of the {@link SessionStore} in use. */
export const SESSION_STORE = Symbol('SESSION_STORE');

/**
 * Where sessions live. The in-memory store is the embedded default; a shared store (Redis) lets
 * any instance resume any session. Every method is atomic for one session, so two requests
 * touching one session never lose an update. A session idle for longer than the timeout the
 * store was built with no longer exists.
 */
export interface SessionStore {
  create(session: Session): Promise<void>;
  get(id: string): Promise<Session | undefined>;
  /** Applies `change` to the current session and stores it; `undefined` when the session is gone. */
  update(id: string, change: (session: Session) => void): Promise<Session | undefined>;
  /** Appends to the history, keeping the last `limit` messages. */
  appendHistory(id: string, messages: HistoryMessage[], limit: number): Promise<void>;
  /** Marks the session active now, restarting its timeout. */
  touch(id: string): Promise<void>;
  delete(id: string): Promise<boolean>;
  /** Removes expired sessions (a store with its own expiry, such as Redis TTLs, may do nothing); returns how many. */
  sweep(): Promise<number>;
}
