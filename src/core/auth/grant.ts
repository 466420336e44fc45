import type { PrincipalBudgets } from '../budgets/budget-limits';

/**
 * What a principal may do: the tokens file's entry for a named token, everything for
 * `AUTH_TOKENS` and for anonymous callers. Absent limits mean no restriction.
 */
export interface Grant {
  /** The token's name in the tokens file; `undefined` for `AUTH_TOKENS` and anonymous callers. */
  readonly name?: string;
  /** The protocols whose routes the token may open; all of them when absent. */
  readonly protocols?: ReadonlySet<string>;
  /** Whether the token may use the shared tool `toolName` (its connection's own client tools are always its own). */
  readonly mayUseTool: (toolName: string) => boolean;
  /** Whether `mayUseTool` can say no: lets a listing skip the filter for unrestricted tokens. */
  readonly restrictsTools: boolean;
  /**
   * Whether the token may list and read the upstream MCP resource `uri` (`resources` globs), and
   * use a resource template whose `uriTemplate` string matches.
   */
  readonly mayReadResource: (uri: string) => boolean;
  /** Whether the token may list, get and complete the upstream MCP prompt `promptName` (its catalogue name, `prompts` globs). */
  readonly mayUsePrompt: (promptName: string) => boolean;
  /** Whether the token may hold LLM-gateway turns. */
  readonly llm: boolean;
  readonly turnsPerMinute?: number;
  readonly toolCallsPerMinute?: number;
  /** WebSocket connections the token may hold at once, on every protocol together. */
  readonly maxConnections?: number;
  /**
   * The device ids (`devices` globs) the token may connect as, and whose devices its agents may
   * reach whoever connected them. Absent: it may connect as any id, and reaches only the devices
   * its own principal connected.
   */
  readonly devices?: (deviceId: string) => boolean;
  /** Its `budgets`: limits over all its devices, and `per_device` limits of each (see `BudgetService`). */
  readonly budgets?: PrincipalBudgets;
}

/** Everything: `AUTH_TOKENS`, anonymous callers while auth is off, internal callers. */
export const FULL_ACCESS: Grant = Object.freeze({
  mayUseTool: () => true,
  restrictsTools: false,
  mayReadResource: () => true,
  mayUsePrompt: () => true,
  llm: true,
});

/**
 * Nothing: a named token that a reload of the file removed, seen on a connection it opened
 * before. The connection stays, but sees no tool, resource or prompt and holds no turn.
 */
export const NO_ACCESS: Grant = Object.freeze({
  protocols: new Set<string>(),
  mayUseTool: () => false,
  restrictsTools: true,
  mayReadResource: () => false,
  mayUsePrompt: () => false,
  llm: false,
  devices: () => false,
});

/** Whether the grant restricts nothing a caller could read or do (rate limits and connection caps aside). */
export function hasFullAccess(grant: Grant): boolean {
  return grant.protocols === undefined && !grant.restrictsTools && grant.llm;
}

/** A protocol the grant does not allow: the refusal's words; `undefined` when allowed. */
export function protocolRefusal(grant: Grant, protocol: string): string | undefined {
  if (!grant.protocols || grant.protocols.has(protocol)) return undefined;
  const who = grant.name === undefined ? 'This token' : `Token "${grant.name}"`;
  return `${who} may not use ${protocol} (its protocols: ${[...grant.protocols].join(', ') || 'none'})`;
}
