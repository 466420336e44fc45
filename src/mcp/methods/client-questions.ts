import { CreateMessageResultSchema, ElicitResultSchema, ErrorCode, ListRootsResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';

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
 * The key a client is asked `method` under, when its revision asks by key (2026: `inputRequests`),
 * among the questions still open (`taken`): the key the upstream asked it under (`named`), so the
 * client sees the upstream's own names, unless another open question has it; else the gateway's
 * `<capability>-N`.
 */
export function keyForQuestion(method: QuestionMethod, named: string | undefined, taken: (key: string) => boolean, nextNumber: () => number): string {
  if (named !== undefined && named !== '' && !taken(named)) return named;
  let key: string;
  do key = `${CLIENT_QUESTIONS[method].capability}-${nextNumber()}`;
  while (taken(key));
  return key;
}

/** `answer` as the answer `method` asks for, or why it is not one. */
export function parsedAnswer(method: QuestionMethod, answer: unknown) {
  return CLIENT_QUESTIONS[method].result.safeParse(answer);
}
