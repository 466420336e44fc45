import { LoggingLevel, LoggingLevelSchema, ProgressToken, ServerNotification } from '@modelcontextprotocol/sdk/types.js';
import type { ToolCaller } from '../../core/tools/tool-definition';

const SEVERITY: readonly LoggingLevel[] = LoggingLevelSchema.options;

/** The level a client asked for (2025: `logging/setLevel` for its session; 2026: in each request's `_meta`); messages below it are not sent. */
export class LogThreshold {
  private level?: LoggingLevel;

  set(level: LoggingLevel): void {
    this.level = level;
  }

  /** Whether a message of `level` goes out: every message until the client sets a level, as the SDKs' servers do. */
  admits(level: string): boolean {
    if (this.level === undefined) return true;
    const rank = SEVERITY.indexOf(level as LoggingLevel);
    return rank === -1 || rank >= SEVERITY.indexOf(this.level);
  }
}

/**
 * What a call tells its client while it runs, sent by `notify` (each revision's own way to reach
 * that client): progress under `progressToken` (only when the request sent one), and log messages
 * at or above `threshold` (none without one); each with `_meta`, when given.
 */
export function progressAndLogs(
  notify: (notification: ServerNotification) => Promise<unknown>,
  progressToken: ProgressToken | undefined,
  threshold: LogThreshold | undefined,
  _meta?: Record<string, unknown>,
): Pick<ToolCaller, 'progress' | 'log'> {
  return {
    ...(progressToken !== undefined && {
      progress: async (update) => void (await notify({ method: 'notifications/progress', params: { ...update, progressToken, ...(_meta && { _meta }) } })),
    }),
    ...(threshold && {
      log: async (message) => {
        if (!threshold.admits(message.level)) return;
        await notify({ method: 'notifications/message', params: { ...message, level: message.level as LoggingLevel, ...(_meta && { _meta }) } });
      },
    }),
  };
}
