import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { ProgressToken, RELATED_TASK_META_KEY, ServerNotification, ServerRequest } from '@modelcontextprotocol/sdk/types.js';
import type { ToolCaller } from '../../../core/tools/tool-definition';
import { LogThreshold, progressAndLogs } from '../../methods/client-notifications';
import { CLIENT_QUESTIONS, QuestionMethod, questionRefusal } from '../../methods/client-questions';

/**
 * The client of one request of a 2025 session, as the tool's {@link ToolCaller}: progress goes to
 * it under the request's `progressToken` (only when it sent one), log messages at or above the
 * session's level, and elicitation, sampling and roots requests when it declared the capability;
 * all of them on the request's own stream (`relatedRequestId`), so a Streamable HTTP client gets
 * them in the request's response. `roots/list` to a client that did not declare roots is answered
 * with no roots, not refused: the upstream asks because the gateway declares roots, not this
 * client, and "none" is what it heard before the gateway did.
 */
export function sessionCaller(server: Server, extra: RequestHandlerExtra<ServerRequest, ServerNotification>, logLevel: LogThreshold): ToolCaller {
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
export function taskCaller(server: Server, taskId: string, progressToken: ProgressToken | undefined, logLevel: LogThreshold, stopped: AbortSignal): ToolCaller {
  const notify = async (notification: ServerNotification) => {
    if (!stopped.aborted) await server.notification(notification).catch(() => undefined);
  };
  return progressAndLogs(notify, progressToken, logLevel, { [RELATED_TASK_META_KEY]: { taskId } });
}
