import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { newId } from '../../core/new-id';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';
import { ANONYMOUS_PRINCIPAL } from '../../core/auth/access-token.service';
import { GatewayError, GatewayErrorCode } from '../../core/errors/gateway-error';
import type { HistoryMessage, Session, SessionSettings } from './session';
import { SessionExpiredError } from './session-expired.error';
import { SESSION_PRESENCE, SessionPresence } from './session-presence';
import { SESSION_STORE, SessionRef, SessionStore } from './session-store';

/**
 * Whether `owner`'s sessions are held to `CLOUD_SESSION_MAX_PER_PRINCIPAL`: every token's are when
 * it is set, but not the anonymous principal's (auth off), which all clients share.
 */
export function isCapped(owner: string, maxPerPrincipal: number): boolean {
  return maxPerPrincipal > 0 && owner !== ANONYMOUS_PRINCIPAL;
}

interface Attachment {
  connectionId: string;
  /** Whose it is: the store's writes keep the owner's index in step. */
  owner: string;
  /** Called when another connection resumes the session, so this one can move on. */
  onTakenOver: () => void;
  /** Counts the changes of the session's settings made here, so a turn knows when to re-read them. */
  revision: number;
}

/**
 * Conversations (LLM gateway spec, section 6): created on connect, resumed by id by the
 * principal that created them, kept until they are idle for `CLOUD_SESSION_TIMEOUT`, swept every
 * `CLOUD_SESSION_CLEANUP_INTERVAL`. A session attached to a live connection stays alive. A token
 * keeps at most `CLOUD_SESSION_MAX_PER_PRINCIPAL` sessions: a new one past it removes its least
 * recently active (attached sessions are touched every sweep, so idle ones go first).
 *
 * One session, one connection, across every instance sharing the store: when a second
 * connection resumes a session (a device that reconnected, perhaps to another instance, before
 * its old socket was noticed dead), the session moves to it and the previous connection is
 * told through its `onTakenOver` callback: at once on this instance, through the
 * {@link SessionPresence} announcements on the others.
 *
 * Store failures surface as SESSION_ERROR, never as a raw exception.
 */
@Injectable()
export class SessionService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('Sessions');
  private readonly attachments = new Map<string, Attachment>();
  private sweeper?: NodeJS.Timeout;
  /** The configured defaults, one frozen object that every new session shares until it is configured. */
  private readonly defaultSettings: SessionSettings;

  constructor(
    @Inject(SESSION_STORE) private readonly store: SessionStore,
    @Inject(SESSION_PRESENCE) private readonly presence: SessionPresence,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {
    const { temperature, maxTokens, enableContext } = config.llm;
    this.defaultSettings = Object.freeze({ temperature, maxTokens, enableContext });
  }

  onModuleInit(): void {
    this.sweeper = setInterval(() => void this.sweep(), this.config.session.cleanupIntervalMs);
    this.sweeper.unref();
    this.presence.onAttachedElsewhere((sessionId) => {
      const local = this.attachments.get(sessionId);
      if (!local) return;
      this.attachments.delete(sessionId);
      local.onTakenOver();
    });
  }

  onModuleDestroy(): void {
    clearInterval(this.sweeper);
  }

  /** A new session owned by `owner`, with the configured default settings. */
  async create(owner: string): Promise<Session> {
    const now = Date.now();
    const session: Session = { id: newId(), owner, createdAt: now, lastActiveAt: now, settings: this.defaultSettings, history: [] };
    await this.guard(() => this.store.create(session));
    const { maxPerPrincipal } = this.config.session;
    if (isCapped(owner, maxPerPrincipal)) {
      const removed = await this.guard(() => this.store.trimOwner(owner, maxPerPrincipal));
      if (removed > 0) this.logger.debug?.(`Removed ${removed} least recently active session(s) of ${owner} (CLOUD_SESSION_MAX_PER_PRINCIPAL)`);
    }
    return session;
  }

  /** The session `id` if it exists and `owner` created it; otherwise SESSION_ERROR. */
  async resume(id: string, owner: string): Promise<Session> {
    const session = await this.guard(() => this.store.get(id));
    if (!session || session.owner !== owner) {
      throw new GatewayError(GatewayErrorCode.SESSION_ERROR, `Session "${id}" does not exist, has expired, or belongs to another client`);
    }
    return session;
  }

  /** The session `id`, or {@link SessionExpiredError} when it is gone (SESSION_ERROR when the store fails). */
  async require(id: string): Promise<Session> {
    const session = await this.guard(() => this.store.get(id));
    if (!session) throw new SessionExpiredError(id);
    return session;
  }

  /** Changes some settings of the session; a setting given as `undefined` is cleared. {@link SessionExpiredError} when it is gone. */
  async configure(id: string, settings: Partial<SessionSettings>): Promise<void> {
    const attachment = this.attachments.get(id);
    if (attachment) attachment.revision += 1;
    const found = await this.guard(async () => {
      const session = await this.refOf(id);
      return session !== undefined && (await this.store.updateSettings(session, settings));
    });
    if (!found) throw new SessionExpiredError(id);
  }

  /**
   * How many times the settings of an attached session were changed here: a turn builds its
   * system prompt once and builds it again only when this moved (a tool changed the language).
   */
  revision(id: string): number {
    return this.attachments.get(id)?.revision ?? 0;
  }

  /**
   * Keeps one exchange in the history, within `CLOUD_SESSION_MAX_HISTORY`; an interrupted
   * answer of which nothing was spoken leaves the user's words alone. False when the session is
   * gone; SESSION_ERROR when the store failed, in which case the exchange was not kept and never
   * will be.
   */
  async recordExchange(id: string, user: string, assistant: string): Promise<boolean> {
    const messages: HistoryMessage[] = [{ role: 'user', content: user }];
    if (assistant !== '') messages.push({ role: 'assistant', content: assistant });
    return this.guard(async () => {
      const session = await this.refOf(id);
      return session !== undefined && (await this.store.appendHistory(session, messages, this.config.session.maxHistory));
    });
  }

  async touch(id: string): Promise<void> {
    await this.guard(async () => {
      const session = await this.refOf(id);
      if (session) await this.store.touch(session);
    });
  }

  async end(id: string): Promise<void> {
    const attached = this.attachments.get(id);
    this.attachments.delete(id);
    await this.guard(async () => {
      const session = attached ? { id, owner: attached.owner } : await this.refOf(id);
      if (session) await this.store.delete(session);
    });
  }

  /** Binds the session to a connection; a connection already holding it, here or elsewhere, is told it was taken over. */
  attach({ id: sessionId, owner }: SessionRef, connectionId: string, onTakenOver: () => void): void {
    const previous = this.attachments.get(sessionId);
    this.attachments.set(sessionId, { connectionId, owner, onTakenOver, revision: previous?.revision ?? 0 });
    if (previous && previous.connectionId !== connectionId) previous.onTakenOver();
    this.presence
      .announceAttach(sessionId)
      .catch((error: Error) => this.logger.warn(`Could not announce session ${sessionId} to other instances: ${error.message}`));
  }

  /** How many sessions connections of this instance hold right now. */
  get attachedCount(): number {
    return this.attachments.size;
  }

  /** Releases the session from `connectionId` (it closed or moved on); the session stays resumable. */
  detach(sessionId: string, connectionId: string): void {
    if (this.attachments.get(sessionId)?.connectionId === connectionId) this.attachments.delete(sessionId);
  }

  /** Keeps attached sessions alive and removes expired ones; returns how many were removed. */
  async sweep(): Promise<number> {
    try {
      await Promise.all([...this.attachments].map(([id, { owner }]) => this.store.touch({ id, owner })));
      const removed = await this.store.sweep();
      if (removed > 0) this.logger.debug?.(`Removed ${removed} expired session(s)`);
      return removed;
    } catch (error) {
      this.logger.warn(`Session cleanup failed: ${(error as Error).message}`);
      return 0;
    }
  }

  /** Who owns session `id`: known for the sessions attached here, read from the store for others; undefined when it is gone. */
  private async refOf(id: string): Promise<SessionRef | undefined> {
    const owner = this.attachments.get(id)?.owner;
    if (owner !== undefined) return { id, owner };
    const session = await this.store.get(id);
    return session && { id, owner: session.owner };
  }

  private async guard<T>(operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      if (error instanceof GatewayError) throw error;
      this.logger.error(`Session store failed: ${(error as Error)?.message ?? error}`);
      throw new GatewayError(GatewayErrorCode.SESSION_ERROR, 'Session store unavailable');
    }
  }
}
