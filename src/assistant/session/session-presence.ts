/** DI token of the {@link SessionPresence} in use. */
export const SESSION_PRESENCE = Symbol('SESSION_PRESENCE');

/**
 * Which instance holds which session, as far as the others need to know: when a connection on
 * one instance resumes a session, the instance that held it moves its connection on. With one
 * instance there is nobody to tell ({@link LocalSessionPresence}); with Redis, announcements
 * travel on a pub/sub channel (`RedisSessionPresence`).
 */
export interface SessionPresence {
  /** Tells the other instances that a connection here now holds `sessionId`. */
  announceAttach(sessionId: string): Promise<void>;
  /** `listener` hears when another instance announces that it holds a session. */
  onAttachedElsewhere(listener: (sessionId: string) => void): void;
}

/** One instance alone: there is no other to tell, and none tells it anything. */
export class LocalSessionPresence implements SessionPresence {
  async announceAttach(): Promise<void> {}

  onAttachedElsewhere(): void {}
}
