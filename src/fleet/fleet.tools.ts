import { Injectable } from '@nestjs/common';
import { GatewayError } from '../core/errors/gateway-error';
import type { ToolCallContext } from '../core/tools/tool-definition';
import { ToolError } from '../core/tools/tool-error';
import { BuiltinTool } from '../core/tools/tool.decorator';
import { FleetService } from './fleet.service';

interface SayArguments {
  device_id: string;
  text: string;
  interrupt?: boolean;
  hold_s?: number;
}

/**
 * The fleet as tools: `device_say` makes a device the caller may reach speak, for agents (an
 * MCP client, a home-automation system) and for a device's own model ("tell the kitchen dinner
 * is ready").
 */
@Injectable()
export class FleetTools {
  constructor(private readonly fleet: FleetService) {}

  @BuiltinTool({
    name: 'device_say',
    description:
      'Makes a connected voice device say a sentence now (it waits for the turn in flight unless interrupt is true). Offline devices: refused, unless hold_s keeps it for the next connection.',
    inputSchema: {
      type: 'object',
      properties: {
        device_id: { type: 'string', minLength: 1, maxLength: 62, description: 'The device, as it named itself (Device-Id)', examples: ['kitchen-speaker'] },
        text: { type: 'string', minLength: 1, description: 'What the device says', examples: ['Dinner is ready.'] },
        interrupt: { type: 'boolean', default: false, description: 'Cancel what the device is saying first' },
        hold_s: { type: 'number', minimum: 0, description: 'If the device is offline, keep the sentence this many seconds for its next connection' },
      },
      required: ['device_id', 'text'],
      additionalProperties: false,
    },
  })
  async say({ device_id: deviceId, text, interrupt, hold_s: holdS }: SayArguments, { principal }: ToolCallContext) {
    try {
      const { delivered, turnId } = await this.fleet.say(deviceId, { text, interrupt, holdS }, { principal });
      return { delivered, turn_id: turnId };
    } catch (error) {
      if (error instanceof GatewayError) throw new ToolError(error.message, { code: error.code });
      throw error;
    }
  }
}
