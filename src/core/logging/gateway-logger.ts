import { ConsoleLogger, LogLevel } from '@nestjs/common';
import type { GatewayConfig } from '../../config/gateway-config';

export interface GatewayLoggerOptions {
  /** Write every record to stderr: required where stdout carries a protocol (LiteMCP stdio). */
  stderrOnly?: boolean;
}

/**
 * Nest's console logger set from `CLOUD_LOG_LEVEL` and `CLOUD_LOG_FORMAT`: one JSON object per
 * line (`json`, the default, for log collectors) or Nest's coloured text (`text`, for people).
 */
export class GatewayLogger extends ConsoleLogger {
  private readonly stderrOnly: boolean;

  constructor(settings: Pick<GatewayConfig['server'], 'logLevels' | 'logFormat'>, options: GatewayLoggerOptions = {}) {
    const json = settings.logFormat === 'json';
    super({ logLevels: settings.logLevels, json, colors: !json && process.stdout.isTTY === true });
    this.stderrOnly = options.stderrOnly ?? false;
  }

  protected override printMessages(
    messages: unknown[],
    context?: string,
    logLevel?: LogLevel,
    writeStreamType?: 'stdout' | 'stderr',
    errorStack?: unknown,
  ): void {
    super.printMessages(messages, context, logLevel, this.stderrOnly ? 'stderr' : writeStreamType, errorStack);
  }
}
