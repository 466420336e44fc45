import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  CreateMessageResultSchema,
  ElicitResultSchema,
  ErrorCode,
  ListRootsResultSchema,
  LoggingLevel,
  LoggingLevelSchema,
  McpError,
  ProgressToken,
  RELATED_TASK_META_KEY,
  ServerNotification,
  ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import type { ToolCaller } from '../core/tools/tool-definition';

const SEVERITY: readonly LoggingLevel[] = LoggingLevelSchema.options;

/** The questions a tool may put to its client (server-to-client requests), with the client capability each needs and the schema of its answer. */
export const CLIENT_QUESTIONS = {
  'elicitation/create': { capability: 'elicitation', result: ElicitResultSchema },
  'sampling/createMessage': { capability: 'sampling', result: CreateMessageResultSchema },
  'roots/list': { capability: 'roots', result: ListRootsResultSchema },
} as const;

export type QuestionMethod = keyof typeof CLIENT_QUESTIONS;

/** The capability a client must have declared to be asked `method`, when it has not; `undefined` when it has, or `method` is no question. */
export function missingCapability(method: string, capabilities: Record<string, unknown> | undefined): string | undefined {
  const question = Object.hasOwn(CLIENT_QUESTIONS, method) ? CLIENT_QUESTIONS[method as QuestionMethod] : undefined;
  return question && !capabilities?.[question.capability] ? question.capability : undefined;
}

/** Why `method` cannot be put to a client that declared `capabilities`; `undefined` when it can. */
export function questionRefusal(method: string, capabilities: Record<string, unknown> | undefined): McpError | undefined {
  if (!Object.hasOwn(CLIENT_QUESTIONS, method)) return new McpError(ErrorCode.MethodNotFound, `The gateway does not relay "${method}" to its clients`);
  const missing = missingCapability(method, capabilities);
  if (missing === undefined) return undefined;
  return new McpError(ErrorCode.InvalidRequest, `The client that made this call cannot answer ${method}: it did not declare the ${missing} capability`);
}

/**
 * The key a 2026 client is asked `method` under, among the questions of its round (`taken`): the
 * key the upstream asked it under (`named`), so the client sees the upstream's own names, unless
 * another question of the round has it; else the gateway's `<capability>-N`.
 */
export function keyForQuestion(method: QuestionMethod, named: string | undefined, taken: (key: string) => boolean, nextNumber: () => number): string {
  if (named !== undefined && named !== '' && !taken(named)) return named;
  let key: string;
  do key = `${CLIENT_QUESTIONS[method].capability}-${nextNumber()}`;
  while (taken(key));
  return key;
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
 * elicitation, sampling and roots requests when it declared the capability; all of them on the
 * call's own stream (`relatedRequestId`), so a Streamable HTTP client gets them in the call's
 * response. `roots/list` to a client that did not declare roots is answered with no roots, not
 * refused: the upstream asks because the gateway declares roots, not this client, and "none" is
 * what it heard before the gateway did.
 */
export function mcpToolCaller(server: Server, extra: RequestHandlerExtra<ServerRequest, ServerNotification>, logLevel: SessionLogLevel): ToolCaller {
  const notify = (notification: ServerNotification) => extra.sendNotification(notification).catch(() => undefined);
  return {
    ...progressAndLogs(notify, extra._meta?.progressToken, logLevel),
    request: async (method, params, signal) => {
      const capabilities = server.getClientCapabilities();
      if (method === 'roots/list' && !capabilities?.roots) return { roots: [] };
      const refusal = questionRefusal(method, capabilities);
      if (refusal) throw refusal;
      return extra.sendRequest({ method, params } as ServerRequest, CLIENT_QUESTIONS[method as QuestionMethod].result, { signal });
    },
  };
}

/**
 * The client of a 2025 task's call (a `tools/call` with `task`). The call outlives its request, so
 * what it tells its client goes on the session's own channel (Streamable HTTP's GET stream, the
 * WebSocket), each message naming its task (`io.modelcontextprotocol/related-task`) as the
 * revision asks: progress under the request's `progressToken` (only when it sent one), log
 * messages at or above the session's level, and nothing once the task has been stopped. It cannot
 * be asked anything: the revision's way, questions over `tasks/result`, is not relayed.
 */
export function mcpTaskCaller(
  server: Server,
  taskId: string,
  progressToken: ProgressToken | undefined,
  logLevel: SessionLogLevel,
  stopped: AbortSignal,
): ToolCaller {
  const notify = async (notification: ServerNotification) => {
    if (!stopped.aborted) await server.notification(notification).catch(() => undefined);
  };
  return progressAndLogs(notify, progressToken, logLevel, { [RELATED_TASK_META_KEY]: { taskId } });
}

/**
 * What a 2025 call tells its client, sent by `notify`: progress under `progressToken` (only when
 * the request sent one), and log messages at or above `logLevel`; each with `_meta`, when given.
 */
function progressAndLogs(
  notify: (notification: ServerNotification) => Promise<void>,
  progressToken: ProgressToken | undefined,
  logLevel: SessionLogLevel,
  _meta?: Record<string, unknown>,
): Pick<ToolCaller, 'progress' | 'log'> {
  return {
    ...(progressToken !== undefined && {
      progress: (update) => notify({ method: 'notifications/progress', params: { ...update, progressToken, ...(_meta && { _meta }) } }),
    }),
    log: async (message) => {
      if (!logLevel.admits(message.level)) return;
      await notify({ method: 'notifications/message', params: { ...message, level: message.level as LoggingLevel, ...(_meta && { _meta }) } });
    },
  };
}
