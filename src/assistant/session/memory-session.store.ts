import type { HistoryMessage, Session, SessionSettings } from './session';
import type { SessionRef, SessionStore, SessionStoreProbe } from './session-store';

const NO_HISTORY: readonly HistoryMessage[] = Object.freeze([]);
const UP: Promise<SessionStoreProbe> = Promise.resolve(Object.freeze({ up: true }));

/**
 * Sessions in this process's memory: the embedded default, for one instance. A session's
 * settings and history are never changed in place: each write replaces them, so what `get`
 * returns (a shallow copy) stays as it was read, as with a remote store, without a deep copy
 * per read. They do not survive a restart: use the Redis store for that.
 */
export class MemorySessionStore implements SessionStore {
  private readonly sessions = new Map<string, Session>();
  /**
   * The session ids of each owner that {@link trimOwner} may be asked to trim, least recently
   * active first: every write moves its session to the end (a Set keeps insertion order), so a
   * trim reads only the sessions it removes. Owners never trimmed (no cap, or auth off) are not
   * ordered, and their sessions cost nothing more.
   */
  private readonly byOwner = new Map<string, Set<string>>();

  constructor(
    private readonly timeoutMs: number,
    private readonly now: () => number = Date.now,
    /** Whether an owner's sessions may be trimmed (see `isCapped`); all by default. */
    private readonly trimmable: (owner: string) => boolean = () => true,
  ) {}

  /** Frozen settings and an empty history are kept as they are, shared: every write replaces them anyway. */
  async create(session: Session): Promise<void> {
    const { settings, history } = session;
    this.sessions.set(session.id, {
      ...session,
      settings: Object.isFrozen(settings) ? settings : { ...settings },
      history: history.length === 0 ? NO_HISTORY : [...history],
    });
    this.markActive(session);
  }

  async get(id: string): Promise<Session | undefined> {
    const session = this.live(id);
    return session && { ...session };
  }

  async updateSettings({ id }: SessionRef, settings: Partial<SessionSettings>): Promise<boolean> {
    const session = this.live(id);
    if (!session) return false;
    const next: SessionSettings = { ...session.settings };
    for (const [key, value] of Object.entries(settings) as [keyof SessionSettings, never][]) {
      if (value === undefined) delete next[key];
      else next[key] = value;
    }
    session.settings = next;
    this.touchLive(session);
    return true;
  }

  async appendHistory({ id }: SessionRef, messages: readonly HistoryMessage[], limit: number): Promise<boolean> {
    const session = this.live(id);
    if (!session) return false;
    session.history = limit > 0 ? [...session.history, ...messages.map((message) => ({ ...message }))].slice(-limit) : NO_HISTORY;
    this.touchLive(session);
    return true;
  }

  async touch({ id }: SessionRef): Promise<void> {
    const session = this.live(id);
    if (session) this.touchLive(session);
  }

  async delete({ id }: SessionRef): Promise<boolean> {
    return this.remove(id);
  }

  /** Removes from the front of the owner's activity order: the least recently active first. */
  async trimOwner(owner: string, keep: number): Promise<number> {
    const ids = this.byOwner.get(owner);
    let excess = (ids?.size ?? 0) - keep;
    if (!ids || excess <= 0) return 0;
    const removed = excess;
    for (const id of ids) {
      this.remove(id);
      if (--excess === 0) break;
    }
    return removed;
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

  probe(): Promise<SessionStoreProbe> {
    return UP;
  }

  readonly ready = true;

  /** How many sessions are held (expired ones not yet swept included). */
  get size(): number {
    return this.sessions.size;
  }

  private touchLive(session: Session): void {
    session.lastActiveAt = this.now();
    this.markActive(session);
  }

  /** Moves the session to the end of its owner's activity order. */
  private markActive({ id, owner }: Session): void {
    if (!this.trimmable(owner)) return;
    let ids = this.byOwner.get(owner);
    if (!ids) this.byOwner.set(owner, (ids = new Set()));
    ids.delete(id);
    ids.add(id);
  }

  private remove(id: string): boolean {
    const session = this.sessions.get(id);
    if (!session) return false;
    this.sessions.delete(id);
    const ids = this.byOwner.get(session.owner);
    ids?.delete(id);
    if (ids?.size === 0) this.byOwner.delete(session.owner);
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
