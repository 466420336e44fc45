import type { HistoryMessage, Session, SessionSettings } from './session';

/** DI token of the {@link SessionStore} in use. */
export const SESSION_STORE = Symbol('SESSION_STORE');

/** A session as the store's writes name it: its owner keeps the owner's index in step with each write. */
export type SessionRef = Pick<Session, 'id' | 'owner'>;

/** What one look at the store found (for readiness and `/health`). */
export interface SessionStoreProbe {
  up: boolean;
  /** Why it is down, in words an operator acts on. */
  problem?: string;
  /** How long the round trip took, for a remote store. */
  latencyMs?: number;
}

/**
 * Where sessions live. The in-memory store is the embedded default; the Redis store lets every
 * instance resume any session and keeps sessions across restarts. Each write is atomic in the
 * store itself (no read-modify-write by the caller), so two requests touching one session
 * never lose an update, and a write its caller was told failed never lands later. A session
 * idle for longer than the store's timeout no longer exists.
 */
export interface SessionStore {
  create(session: Session): Promise<void>;
  get(id: string): Promise<Session | undefined>;
  /** Sets the given settings; a key given as `undefined` is cleared. False when the session is gone. */
  updateSettings(session: SessionRef, settings: Partial<SessionSettings>): Promise<boolean>;
  /** Appends to the history, keeping the last `limit` messages. False when the session is gone. */
  appendHistory(session: SessionRef, messages: readonly HistoryMessage[], limit: number): Promise<boolean>;
  /** Marks the session active now, restarting its timeout. */
  touch(session: SessionRef): Promise<void>;
  delete(session: SessionRef): Promise<boolean>;
  /**
   * Keeps at most `keep` live sessions of `owner`, removing the least recently active others;
   * returns how many it removed. Its cost grows with what it removes, not with what it keeps.
   */
  trimOwner(owner: string, keep: number): Promise<number>;
  /** Removes expired sessions (a store with its own expiry, such as Redis TTLs, does nothing); returns how many. */
  sweep(): Promise<number>;
  /**
   * Whether the store answers now: a bounded round trip for a remote store, shared and kept
   * briefly, since balancers poll readiness often. Never rejects.
   */
  probe(): Promise<SessionStoreProbe>;
  /** Whether the store could serve at its last look (its connection, its last probe), without asking it. */
  readonly ready: boolean;
}
