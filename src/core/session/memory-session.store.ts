import type { HistoryMessage, Session, SessionSettings } from './session';
import type { SessionStore } from './session-store';

const NO_HISTORY: readonly HistoryMessage[] = Object.freeze([]);

/**
 * Sessions in this process's memory: the embedded default, for one instance. A session's
 * settings and history are never changed in place: each write replaces them, so what `get`
 * returns (a shallow copy) stays as it was read, as with a remote store, without a deep copy
 * per read. They do not survive a restart: use the Redis store for that.
 */
export class MemorySessionStore implements SessionStore {
  private readonly sessions = new Map<string, Session>();
  /** How many sessions each owner has: {@link trimOwner} looks further only for an owner over its limit. */
  private readonly counts = new Map<string, number>();

  constructor(
    private readonly timeoutMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Frozen settings and an empty history are kept as they are, shared: every write replaces them anyway. */
  async create(session: Session): Promise<void> {
    const { settings, history } = session;
    this.sessions.set(session.id, {
      ...session,
      settings: Object.isFrozen(settings) ? settings : { ...settings },
      history: history.length === 0 ? NO_HISTORY : [...history],
    });
    this.counts.set(session.owner, (this.counts.get(session.owner) ?? 0) + 1);
  }

  async get(id: string): Promise<Session | undefined> {
    const session = this.live(id);
    return session && { ...session };
  }

  async updateSettings(id: string, settings: Partial<SessionSettings>): Promise<boolean> {
    const session = this.live(id);
    if (!session) return false;
    const next: SessionSettings = { ...session.settings };
    for (const [key, value] of Object.entries(settings) as [keyof SessionSettings, never][]) {
      if (value === undefined) delete next[key];
      else next[key] = value;
    }
    session.settings = next;
    session.lastActiveAt = this.now();
    return true;
  }

  async appendHistory(id: string, messages: readonly HistoryMessage[], limit: number): Promise<void> {
    const session = this.live(id);
    if (!session) return;
    session.history = limit > 0 ? [...session.history, ...messages.map((message) => ({ ...message }))].slice(-limit) : NO_HISTORY;
    session.lastActiveAt = this.now();
  }

  async touch(id: string): Promise<void> {
    const session = this.live(id);
    if (session) session.lastActiveAt = this.now();
  }

  async delete(id: string): Promise<boolean> {
    return this.remove(id);
  }

  /** A pass over every session, only for an owner over `keep`: no index per session to hold. */
  async trimOwner(owner: string, keep: number): Promise<number> {
    if ((this.counts.get(owner) ?? 0) <= keep) return 0;
    const byActivity = [...this.sessions.values()].filter((session) => session.owner === owner).sort((a, b) => a.lastActiveAt - b.lastActiveAt);
    const excess = byActivity.slice(0, byActivity.length - keep);
    for (const session of excess) this.remove(session.id);
    return excess.length;
  }

  async sweep(): Promise<number> {
    let removed = 0;
    for (const [id, session] of this.sessions) {
      if (this.expired(session)) {
        this.remove(id);
        removed += 1;
      }
    }
    return removed;
  }

  readonly ready = true;

  /** How many sessions are held (expired ones not yet swept included). */
  get size(): number {
    return this.sessions.size;
  }

  private remove(id: string): boolean {
    const session = this.sessions.get(id);
    if (!session) return false;
    this.sessions.delete(id);
    const left = this.counts.get(session.owner)! - 1;
    if (left === 0) this.counts.delete(session.owner);
    else this.counts.set(session.owner, left);
    return true;
  }

  private live(id: string): Session | undefined {
    const session = this.sessions.get(id);
    return session && !this.expired(session) ? session : undefined;
  }

  private expired(session: Session): boolean {
    return this.now() - session.lastActiveAt > this.timeoutMs;
  }
}
