import { ConsoleLogger, LogLevel } from '@nestjs/common';
import type { GatewayConfig } from '../../config/gateway-config';
import { StartupError } from '../../shared/startup-error';

/** The longest message one log record carries: clients' words end up in log lines, and a 500 KB frame must not become one. */
export const LOG_MESSAGE_MAX_LENGTH = 2000;

/** `message` cut to {@link LOG_MESSAGE_MAX_LENGTH}, saying how much was left out. */
export function clipLogMessage(message: unknown): unknown {
  if (typeof message !== 'string' || message.length <= LOG_MESSAGE_MAX_LENGTH) return message;
  return `${message.slice(0, LOG_MESSAGE_MAX_LENGTH)}… [${message.length - LOG_MESSAGE_MAX_LENGTH} more characters]`;
}

export interface GatewayLoggerOptions {
  /** Write every record to stderr: required where stdout carries a protocol (LiteMCP stdio). */
  stderrOnly?: boolean;
}

/**
 * Contexts of Nest's own start-up chatter: a line per module, controller, route and WebSocket
 * message type (about forty at each start). Useful when debugging routing, noise otherwise, so
 * their `log` records are demoted to `debug`; their warnings and errors stay as they are.
 */
export const NEST_BOOT_CONTEXTS: ReadonlySet<string> = new Set([
  'NestFactory',
  'InstanceLoader',
  'RoutesResolver',
  'RouterExplorer',
  'WebSocketsController',
  'NestApplication',
]);

/**
 * Nest's console logger set from `CLOUD_LOG_LEVEL` and `CLOUD_LOG_FORMAT`: one JSON object per
 * line (`json`, the default, for log collectors) or Nest's coloured text (`text`, for people).
 * Every message is clipped to a bound, whoever wrote it.
 */
export class GatewayLogger extends ConsoleLogger {
  private readonly stderrOnly: boolean;

  constructor(settings: Pick<GatewayConfig['server'], 'logLevels' | 'logFormat'>, options: GatewayLoggerOptions = {}) {
    const json = settings.logFormat === 'json';
    super({ logLevels: settings.logLevels, json, colors: !json && process.stdout.isTTY === true });
    this.stderrOnly = options.stderrOnly ?? false;
  }

  override log(message: unknown, ...optionalParams: unknown[]): void {
    const last = optionalParams.at(-1);
    const context = typeof last === 'string' ? last : this.context;
    if (context !== undefined && NEST_BOOT_CONTEXTS.has(context)) this.debug(message, ...optionalParams);
    else super.log(message, ...optionalParams);
  }

  /**
   * A {@link StartupError} (a bad setting, an unreachable Redis) is the operator's to fix, and
   * whoever started the gateway tells it in plain words; Nest's exception handler would log it
   * first with a stack trace, which is kept for faults of the code.
   */
  override error(message: unknown, ...optionalParams: unknown[]): void {
    if (message instanceof StartupError) return;
    super.error(message, ...optionalParams);
  }

  protected override printMessages(
    messages: unknown[],
    context?: string,
    logLevel?: LogLevel,
    writeStreamType?: 'stdout' | 'stderr',
    errorStack?: unknown,
  ): void {
    super.printMessages(messages.map(clipLogMessage), context, logLevel, this.stderrOnly ? 'stderr' : writeStreamType, errorStack);
  }
}

/**
 * Writes one warning on stderr in the configured format, whatever `CLOUD_LOG_LEVEL` says: for
 * what an operator must see exactly once to use the gateway at all (a token made for this run).
 */
export function warnWhateverTheLevel(settings: Pick<GatewayConfig['server'], 'logFormat'>, context: string, message: string): void {
  new GatewayLogger({ logLevels: ['warn'], logFormat: settings.logFormat }, { stderrOnly: true }).warn(message, context);
}
