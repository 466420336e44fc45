import { Injectable } from '@nestjs/common';
import { GatewayError } from '../../core/errors/gateway-error';
import type { ToolCallContext } from '../../core/tools/tool-definition';
import { ToolError } from '../../core/tools/tool-error';
import { BuiltinTool } from '../../core/tools/tool.decorator';
import { ONE_DEVICE_SCHEMA } from '../push-request';
import { DeviceBudgets } from './device-budgets';

/** A device's budget as a tool: `device_usage`, for agents of the device's owner. */
@Injectable()
export class BudgetTools {
  constructor(private readonly budgets: DeviceBudgets) {}

  @BuiltinTool({
    name: 'device_usage',
    presentation: { title: "A device's usage and budget", annotations: { readOnlyHint: true, openWorldHint: false } },
    description:
      'What a device of yours has spent this UTC day and month (LLM tokens, synthesized characters, recognized audio seconds), with its limits, what remains and when each period resets.',
    inputSchema: ONE_DEVICE_SCHEMA,
  })
  async usage({ device_id: deviceId }: { device_id: string }, { principal }: ToolCallContext) {
    try {
      return await this.budgets.usage(deviceId, { principal });
    } catch (error) {
      throw error instanceof GatewayError ? new ToolError(error.message, { code: error.code }) : error;
    }
  }
}
