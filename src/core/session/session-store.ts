import type { HistoryMessage, Session, SessionSettings } from './session';

/** DI token of the {@link SessionStore} in use. */
export const SESSION_STORE = Symbol('SESSION_STORE');

/**
 * Where sessions live. The in-memory store is the embedded default; the Redis store lets every
 * instance resume any session and keeps sessions across restarts. Each write is atomic in the
 * store itself (no read-modify-write by the caller), so two requests touching one session
 * never lose an update. A session idle for longer than the store's timeout no longer exists.
 */
export interface SessionStore {
  create(session: Session): Promise<void>;
  get(id: string): Promise<Session | undefined>;
  /** Sets the given settings; a key given as `undefined` is cleared. False when the session is gone. */
  updateSettings(id: string, settings: Partial<SessionSettings>): Promise<boolean>;
  /** Appends to the history, keeping the last `limit` messages. */
  appendHistory(id: string, messages: readonly HistoryMessage[], limit: number): Promise<void>;
  /** Marks the session active now, restarting its timeout. */
  touch(id: string): Promise<void>;
  delete(id: string): Promise<boolean>;
  /**
   * Keeps at most `keep` live sessions of `owner`, removing the least recently active others;
   * returns how many it removed. Cheap while the owner is within `keep`.
   */
  trimOwner(owner: string, keep: number): Promise<number>;
  /** Removes expired sessions (a store with its own expiry, such as Redis TTLs, does nothing); returns how many. */
  sweep(): Promise<number>;
  /** Whether the store can serve requests right now (for `/health`). */
  readonly ready: boolean;
}
