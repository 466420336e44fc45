import { Inject, Injectable } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { GatewayError, GatewayErrorCode } from '../core/errors/gateway-error';
import type { JsonSchema } from '../core/tools/json-schema';
import type { ToolCallContext } from '../core/tools/tool-definition';
import { ToolError } from '../core/tools/tool-error';
import { toolNameProblem } from '../core/tools/tool-name';
import { ToolRegistryService } from '../core/tools/tool-registry.service';
import type { ToolRegistration, ToolResultFrame } from './protocol';
import { TOOL_VISIBILITIES, ToolVisibility } from '../fleet/device-entry';
import type { LlmConnection } from './llm-connection';
import { toolCallbackFrame } from './llm-gateway.frames';

const failed = (name: unknown, code: GatewayErrorCode, error: string): ToolRegistration => ({
  name: typeof name === 'string' ? name : String(name ?? ''),
  status: 'failed',
  error,
  code,
});

/**
 * Tools a device registers and runs itself (spec 4.6, 4.7, 7.3). They join the catalogue as
 * client tools of their connection, visible to nobody else; calling one sends the device a
 * `tool_callback` and waits for its `tool_result` (the catalogue's time limit is
 * `CLIENT_TOOL_TIMEOUT`). They are removed when the connection closes.
 */
@Injectable()
export class ClientToolsService {
  constructor(
    private readonly registry: ToolRegistryService,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {}

  /** Registers each tool on its own merits; a bad tool fails alone, with a reason and a code. */
  register(connection: LlmConnection, tools: Record<string, unknown>[]): ToolRegistration[] {
    const { enabled, maxCount, timeoutMs } = this.config.clientTools;
    if (!enabled) {
      throw new GatewayError(GatewayErrorCode.TOOL_REGISTRATION_FAILED, 'Client tools are disabled on this server');
    }
    const { agentTools } = connection.state;
    return tools.map(({ name, description, parameters, visibility = 'both' }): ToolRegistration => {
      const nameProblem = toolNameProblem(name);
      if (nameProblem) return failed(name, GatewayErrorCode.TOOL_REGISTRATION_FAILED, nameProblem);
      const toolName = name as string;
      if (typeof description !== 'string') {
        return failed(name, GatewayErrorCode.TOOL_REGISTRATION_FAILED, 'description is required and must be a string');
      }
      if (!TOOL_VISIBILITIES.includes(visibility as ToolVisibility)) {
        return failed(name, GatewayErrorCode.TOOL_REGISTRATION_FAILED, 'visibility must be "agents", "model" or "both"');
      }
      if (this.registry.get(toolName, connection.id) || agentTools.has(toolName)) {
        return failed(name, GatewayErrorCode.TOOL_REGISTRATION_FAILED, 'Tool name already exists');
      }
      if (this.countOf(connection) >= maxCount) {
        return failed(name, GatewayErrorCode.TOOL_REGISTRATION_FAILED, `Too many tools: at most ${maxCount} per connection`);
      }
      const spec = {
        name: toolName,
        description,
        inputSchema: parameters as JsonSchema,
        source: `client:${connection.id}` as const,
        timeoutMs,
        handler: (args: Record<string, unknown>, context: ToolCallContext) => this.run(connection, toolName, args, context),
      };
      // Compiled once: the model's view joins its connection's catalogue (unless only agents may
      // call it), and the fleet's view for agents reuses the same check of its arguments.
      try {
        const compiled = this.registry.compile(spec);
        if (visibility !== 'agents') this.registry.add(compiled, connection.id);
        if (visibility !== 'model') {
          const tool = { name: toolName, description, inputSchema: parameters as JsonSchema, visibility: visibility as ToolVisibility };
          agentTools.set(toolName, { tool, validate: compiled.validate });
        }
      } catch (error) {
        return failed(name, GatewayErrorCode.INVALID_TOOL_PARAMETERS, (error as Error).message);
      }
      return { name: toolName, status: 'registered' };
    });
  }

  /**
   * Runs a tool the device offers agents (`visibility` `agents` or `both`) for an agent of the
   * fleet: a `tool_callback` like the model's, until `signal` ends the wait.
   */
  async callForAgent(connection: LlmConnection, toolName: string, args: Record<string, unknown>, signal: AbortSignal): Promise<unknown> {
    if (!connection.state.agentTools.has(toolName)) throw new ToolError(`The device offers agents no tool "${toolName}"`);
    return this.run(connection, toolName, args, { signal });
  }

  /** Settles the callback `call_id` names; an unknown or expired id is INVALID_MESSAGE (spec 11.5). */
  settle(connection: LlmConnection, result: ToolResultFrame): void {
    if (!connection.state.callbacks.settle(result.call_id, result)) {
      throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, `Unknown or expired call_id "${result.call_id}"`);
    }
  }

  /** Removes the connection's tools (it closed). */
  release(connection: LlmConnection): void {
    this.registry.unregisterConnection(connection.id);
    connection.state.agentTools.clear();
  }

  /** Tools the connection registered: those the model sees, and those only agents may call. */
  private countOf(connection: LlmConnection): number {
    const { agentTools } = connection.state;
    const modelTools = this.registry.list(connection.id).filter((tool) => tool.source === `client:${connection.id}`);
    return modelTools.length + [...agentTools.values()].filter(({ tool }) => tool.visibility === 'agents').length;
  }

  /** Runs one of the device's tools: through the connection's own runner when its protocol has one, by `tool_callback` otherwise. */
  private run(connection: LlmConnection, toolName: string, args: Record<string, unknown>, context: ToolCallContext): Promise<unknown> {
    const { toolRunner } = connection.state;
    return toolRunner ? toolRunner(toolName, args, context) : this.callBack(connection, toolName, args, context);
  }

  /** Sends `tool_callback` and waits for the matching `tool_result`, until `signal` ends the wait. */
  private async callBack(connection: LlmConnection, toolName: string, args: Record<string, unknown>, context: ToolCallContext): Promise<unknown> {
    const { signal, turnId } = context;
    const { resultQueueSize } = this.config.clientTools;
    const { callbacks } = connection.state;
    if (callbacks.size >= resultQueueSize) {
      throw new ToolError(`Too many device tool calls waiting: at most ${resultQueueSize}`);
    }
    const { success, result, error } = await callbacks.request((callId) => connection.send(toolCallbackFrame(callId, toolName, args, turnId)), { signal });
    if (!success) throw new ToolError(error || `The device could not run "${toolName}"`);
    return result ?? null;
  }
}
