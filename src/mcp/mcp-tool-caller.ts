import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CreateMessageResultSchema,
  ElicitResultSchema,
  ErrorCode,
  LoggingLevel,
  LoggingLevelSchema,
  McpError,
  ServerNotification,
  ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import type { ToolCaller } from '../core/tools/tool-definition';

const SEVERITY: readonly LoggingLevel[] = LoggingLevelSchema.options;

/** The questions a tool may put to its client (server-to-client requests), with the client capability each needs and the schema of its answer. */
export const CLIENT_QUESTIONS = {
  'elicitation/create': { capability: 'elicitation', result: ElicitResultSchema },
  'sampling/createMessage': { capability: 'sampling', result: CreateMessageResultSchema },
} as const;

export type QuestionMethod = keyof typeof CLIENT_QUESTIONS;

/** Why `method` cannot be put to a client that declared `capabilities`; `undefined` when it can. */
export function questionRefusal(method: string, capabilities: Record<string, unknown> | undefined): McpError | undefined {
  const question = CLIENT_QUESTIONS[method as QuestionMethod];
  if (!question) return new McpError(ErrorCode.MethodNotFound, `The gateway does not relay "${method}" to its clients`);
  if (capabilities?.[question.capability]) return undefined;
  const why = `it did not declare the ${question.capability} capability`;
  return new McpError(ErrorCode.InvalidRequest, `The client that made this call cannot answer ${method}: ${why}`);
}

/** The level a session asked for with `logging/setLevel`; messages below it are not sent. */
export class SessionLogLevel {
  private level?: LoggingLevel;

  set(level: LoggingLevel): void {
    this.level = level;
  }

  /** Whether a message of `level` goes out: every message until the client sets a level, as the SDK's servers do. */
  admits(level: string): boolean {
    if (this.level === undefined) return true;
    const rank = SEVERITY.indexOf(level as LoggingLevel);
    return rank === -1 || rank >= SEVERITY.indexOf(this.level);
  }
}

/**
 * The MCP client of one `tools/call`, as the tool's {@link ToolCaller}: progress goes to it under
 * the call's `progressToken` (only when it sent one), log messages at or above its level, and
 * elicitation and sampling requests when it declared the capability; all of them on the call's
 * own stream (`relatedRequestId`), so a Streamable HTTP client gets them in the call's response.
 */
export function mcpToolCaller(server: Server, extra: RequestHandlerExtra<ServerRequest, ServerNotification>, logLevel: SessionLogLevel): ToolCaller {
  const progressToken = extra._meta?.progressToken;
  const notify = (notification: ServerNotification) => extra.sendNotification(notification).catch(() => undefined);
  return {
    ...(progressToken !== undefined && {
      progress: (update) => notify({ method: 'notifications/progress', params: { ...update, progressToken } }),
    }),
    log: async (message) => {
      if (logLevel.admits(message.level)) await notify({ method: 'notifications/message', params: { ...message, level: message.level as LoggingLevel } });
    },
    request: async (method, params, signal) => {
      const refusal = questionRefusal(method, server.getClientCapabilities());
      if (refusal) throw refusal;
      return extra.sendRequest({ method, params } as ServerRequest, CLIENT_QUESTIONS[method as QuestionMethod].result, { signal });
    },
  };
}
