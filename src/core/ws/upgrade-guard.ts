import type { IncomingMessage } from 'http';

/** What an upgrade guard sees: the HTTP upgrade request, before any socket exists. */
export interface UpgradeContext {
  readonly request: IncomingMessage;
  readonly url: URL;
  readonly params: Readonly<Record<string, string>>;
  /** The route's protocol (`llm`, `mcp`...). */
  readonly protocol: string;
  /** Who the client is, once a guard has authenticated it; the connection starts with it. */
  principal?: string;
}

/**
 * Decides whether a WebSocket upgrade may proceed, before the socket exists, so a refusal is a
 * plain HTTP status. Listed per gateway in `@ProtocolGateway({ upgradeGuards })` and resolved
 * from the app's DI container, like Nest's own guards.
 */
export interface UpgradeGuard {
  /** Returns normally to accept; throws {@link UpgradeRefusedException} to refuse. */
  canUpgrade(context: UpgradeContext): void | Promise<void>;
}

/** A refused upgrade: an HTTP status and message, or (with `closeCode`) accept-then-close. */
export class UpgradeRefusedException extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
    /** When set, the upgrade completes and the socket is closed at once with this code. */
    readonly closeCode?: number,
  ) {
    super(message);
    this.name = 'UpgradeRefusedException';
  }
}
