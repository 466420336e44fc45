import type { ToolCallbackFrame, ToolDefinition, ToolResultFrame } from './protocol/index.js';

/** What a tool handler learns about the call it serves. */
export interface ToolCallContext {
  callId: string;
  toolName: string;
  /**
   * Aborted when the handler's time is up, its turn ended, or the connection dropped; a
   * handler that talks to hardware or the network should stop then.
   */
  signal: AbortSignal;
}

/** Runs a device tool: gets the model's arguments, returns a JSON value (or a promise of one). */
export type ToolHandler<Args extends Record<string, unknown> = Record<string, unknown>> = (args: Args, context: ToolCallContext) => unknown;

/**
 * Who may call a device tool: `agents` (agents and users through the gateway's other protocols;
 * never offered to the model: a reboot, a firmware update), `model` (offered only to this
 * device's own model), or `both`, the gateway's default.
 */
export type ToolVisibility = 'agents' | 'model' | 'both';

export const TOOL_VISIBILITIES: readonly ToolVisibility[] = ['agents', 'model', 'both'];

/** A device tool: its definition for the model, and the function that runs it here. */
export interface ClientTool<Args extends Record<string, unknown> = Record<string, unknown>> extends ToolDefinition {
  /** Sent only when set; the gateway treats a tool without one as `both`. */
  visibility?: ToolVisibility;
  handler: ToolHandler<Args>;
}

/** A tool as `register_tools` carries it. */
export type ToolRegistrationDefinition = ToolDefinition & { visibility?: ToolVisibility };

/** What `register_tools` sends of a tool: its handler stays here, `visibility` goes only when set. */
export function definitionOf({ name, description, parameters, visibility }: ClientTool): ToolRegistrationDefinition {
  return visibility === undefined ? { name, description, parameters } : { name, description, parameters, visibility };
}

/** Nobody waits for the answer any more (the turn ended or the socket dropped): send nothing. */
class CallAbandoned extends Error {}

class HandlerTimedOut extends Error {}

/**
 * Answers `tool_callback`s with the handlers of the registered tools. Every call ends in
 * exactly one `tool_result` while someone waits for it: the handler's value, or `success:
 * false` with the reason when it threw, returned something that is not JSON, or ran past
 * `timeoutMs`. Calls whose turn is over are abandoned without an answer, since the gateway
 * would refuse it as an unknown `call_id`. A call that names no turn (an agent's, through the
 * gateway's other protocols) belongs to no turn, so no turn's end abandons it.
 */
export class ToolRunner {
  private readonly tools = new Map<string, ClientTool>();
  private readonly running = new Map<string, { controller: AbortController; turnId?: string }>();

  constructor(
    private readonly respond: (frame: ToolResultFrame) => void,
    private readonly timeoutMs: number,
  ) {}

  /** Keeps a tool the gateway accepted. */
  accept(tool: ClientTool): void {
    this.tools.set(tool.name, tool);
  }

  forget(name: string): void {
    this.tools.delete(name);
  }

  /** Definitions of the accepted tools, to register them again on a new connection. */
  get definitions(): ToolRegistrationDefinition[] {
    return [...this.tools.values()].map(definitionOf);
  }

  get names(): string[] {
    return [...this.tools.keys()];
  }

  /** Calls currently running. */
  get pending(): number {
    return this.running.size;
  }

  async run(callback: ToolCallbackFrame): Promise<void> {
    const { call_id: callId, tool_name: toolName } = callback;
    const tool = this.tools.get(toolName);
    if (!tool) {
      this.respond({ type: 'tool_result', call_id: callId, success: false, error: `No handler for tool "${toolName}" on this client` });
      return;
    }
    const controller = new AbortController();
    this.running.set(callId, { controller, turnId: callback.turn_id });
    const timer = setTimeout(() => controller.abort(new HandlerTimedOut(`Tool "${toolName}" did not answer within ${this.timeoutMs} ms`)), this.timeoutMs);
    const stopped = new Promise<never>((_, reject) => controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true }));
    const handled = Promise.resolve().then(() => tool.handler(callback.arguments ?? {}, { callId, toolName, signal: controller.signal }));
    // Whichever of the two loses the race may still settle; nobody awaits it then.
    stopped.catch(() => undefined);
    handled.catch(() => undefined);
    try {
      const result = await Promise.race([handled, stopped]);
      this.respond(resultFrame(callId, toolName, result));
    } catch (error) {
      if (error instanceof CallAbandoned) return;
      this.respond({ type: 'tool_result', call_id: callId, success: false, error: describe(error) });
    } finally {
      clearTimeout(timer);
      this.running.delete(callId);
    }
  }

  /** Stops the running calls of turn `turnId` without answering them. */
  abandonTurn(turnId: string, reason: string): void {
    for (const { controller, turnId: owner } of this.running.values()) {
      if (owner === turnId) controller.abort(new CallAbandoned(reason));
    }
  }

  /** Stops every running call without answering it. */
  abandonAll(reason: string): void {
    for (const { controller } of this.running.values()) controller.abort(new CallAbandoned(reason));
  }
}

function resultFrame(callId: string, toolName: string, value: unknown): ToolResultFrame {
  const result = value === undefined ? null : value;
  try {
    JSON.stringify(result);
  } catch (error) {
    return {
      type: 'tool_result',
      call_id: callId,
      success: false,
      error: `Tool "${toolName}" returned a value that is not JSON: ${describe(error)}`,
    };
  }
  return { type: 'tool_result', call_id: callId, success: true, result };
}

function describe(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  return typeof error === 'string' ? error : (JSON.stringify(error) ?? String(error));
}
