import { Injectable, Logger } from '@nestjs/common';
import type { ConfigureFrame, LlmServerFrame } from './protocol';
import type { Session, SessionSettings } from '../assistant/session/session';
import { SessionExpiredError } from '../assistant/session/session-expired.error';
import { SessionService } from '../assistant/session/session.service';
import type { LlmConnection } from './llm-connection';
import { statusFrame } from './llm-gateway.frames';

/** Tells the client of a session change, if its protocol has words for it (`status` frames). */
function announce(connection: LlmConnection, frame: LlmServerFrame): void {
  if (connection.state.announcesSessions) connection.send(frame);
}

/** Why a connection was moved to a new session without asking, as `status connected` says it. */
type MoveReason = 'session_resumed_elsewhere' | 'session_lost';

/**
 * Which session an LLM-gateway connection speaks in (spec sections 2.3, 4.2-4.4, 9.6): one made
 * when it connects, resumed or replaced at the client's request, configured, ended; released
 * when the connection closes. A session is held by one connection at a time: when another
 * resumes it, here or on another instance, this connection moves on to a fresh one and is told.
 * So it does when its session is gone from the store (Redis restarted without its data, or the
 * token's cap forgot it): the connection goes on in a new session rather than failing each turn.
 */
@Injectable()
export class SessionBindingService {
  private readonly logger = new Logger('Sessions');

  constructor(private readonly sessions: SessionService) {}

  /** Gives a new connection its session and announces it (`status: connected`). */
  async open(connection: LlmConnection): Promise<void> {
    const session = await this.sessions.create(connection.principal!);
    this.adopt(connection, session);
    announce(connection, statusFrame('connected', { session_id: session.id }));
  }

  /**
   * Releases the connection's session when it closes. It stays resumable until it has been idle
   * for `CLOUD_SESSION_TIMEOUT` (spec 6.1, 9.6), used or not: the client was given its id and may
   * come back for it. What connections that only come and go leave is bounded by the token's
   * `CLOUD_SESSION_MAX_PER_PRINCIPAL` and the timeout.
   */
  release(connection: LlmConnection): void {
    this.sessions.detach(connection.state.sessionId, connection.id);
  }

  /** The connection's session as it is now, for a turn; a new one, announced, when it is gone. */
  async current(connection: LlmConnection): Promise<Session> {
    const id = connection.state.sessionId;
    try {
      return await this.sessions.require(id);
    } catch (error) {
      if (!(error instanceof SessionExpiredError)) throw error;
      return this.moveOn(connection, id, 'session_lost');
    }
  }

  /** Applies `configure` to the session (and the connection's own switches: cleaning, streaming, barge-in); no answer on success. */
  async configure(connection: LlmConnection, settings: ConfigureFrame): Promise<void> {
    if (settings.clean_response !== undefined) connection.state.cleanResponses = settings.clean_response;
    if (settings.stream !== undefined) connection.state.stream = settings.stream;
    if (settings.barge_in !== undefined) connection.state.bargeIn = settings.barge_in;
    const patch: Partial<SessionSettings> = {
      ...(settings.temperature !== undefined && { temperature: settings.temperature }),
      ...(settings.max_tokens !== undefined && { maxTokens: settings.max_tokens }),
      ...(settings.enable_context !== undefined && { enableContext: settings.enable_context }),
      ...(settings.language !== undefined && { language: settings.language }),
    };
    if (Object.keys(patch).length === 0) return;
    const id = connection.state.sessionId;
    try {
      await this.sessions.configure(id, patch);
    } catch (error) {
      if (!(error instanceof SessionExpiredError)) throw error;
      await this.sessions.configure((await this.moveOn(connection, id, 'session_lost')).id, patch);
    }
  }

  /** `start_session`: resumes `sessionId`, or starts a new session without one; announces it. */
  async startSession(connection: LlmConnection, sessionId: string | undefined): Promise<void> {
    if (sessionId === undefined) {
      const session = await this.sessions.create(connection.principal!);
      this.release(connection);
      this.adopt(connection, session);
    } else if (sessionId !== connection.state.sessionId) {
      await this.switchTo(connection, sessionId);
    }
    announce(connection, statusFrame('connected', { session_id: connection.state.sessionId }));
  }

  /** `end_session`: deletes the session and gives the connection a new one, announcing both. */
  async endSession(connection: LlmConnection): Promise<void> {
    const ended = connection.state.sessionId;
    await this.sessions.end(ended);
    announce(connection, statusFrame('idle', { message: 'Session ended', session_id: ended }));
    const session = await this.sessions.create(connection.principal!);
    this.adopt(connection, session);
    announce(connection, statusFrame('connected', { session_id: session.id }));
  }

  /** Resumes `sessionId` on this connection (SESSION_ERROR when it cannot be). */
  async switchTo(connection: LlmConnection, sessionId: string): Promise<void> {
    const session = await this.sessions.resume(sessionId, connection.principal!);
    this.release(connection);
    this.adopt(connection, session);
  }

  /** Makes `session` the connection's; if another connection resumes it later, this one moves to a fresh session. */
  private adopt(connection: LlmConnection, session: Session): void {
    connection.state.sessionId = session.id;
    this.sessions.attach(session, connection.id, () => void this.moveOnQuietly(connection, session.id));
  }

  /** Gives the connection a new session in place of `previousId` and tells the client why (`status connected`). */
  private async moveOn(connection: LlmConnection, previousId: string, reason: MoveReason): Promise<Session> {
    const session = await this.sessions.create(connection.principal!);
    this.release(connection);
    this.adopt(connection, session);
    announce(connection, statusFrame('connected', { session_id: session.id, previous_session_id: previousId, reason }));
    return session;
  }

  /** Moves on from a session taken over elsewhere; nobody waits on it, so a failure is only logged. */
  private async moveOnQuietly(connection: LlmConnection, takenSessionId: string): Promise<void> {
    try {
      await this.moveOn(connection, takenSessionId, 'session_resumed_elsewhere');
    } catch (error) {
      this.logger.warn(`Could not give connection ${connection.id} a new session: ${(error as Error).message}`);
    }
  }
}
