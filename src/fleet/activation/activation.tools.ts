import { Injectable } from '@nestjs/common';
import { GatewayError } from '../../core/errors/gateway-error';
import type { ToolCallContext } from '../../core/tools/tool-definition';
import { ToolError } from '../../core/tools/tool-error';
import { BuiltinTool } from '../../core/tools/tool.decorator';
import { ActivationService } from './activation.service';

/** Activation as a tool: an agent binds the device its user reads or hears the code of. */
@Injectable()
export class ActivationTools {
  constructor(private readonly activation: ActivationService) {}

  @BuiltinTool({
    name: 'activate_device',
    presentation: { title: 'Activate a device', annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false } },
    description:
      'Binds a new voice device to your account with the 6-digit activation code it shows and speaks: from then on it is yours (listed, pushed to, reachable only by you) and gets a credential of its own.',
    inputSchema: {
      type: 'object',
      properties: { code: { type: 'string', pattern: '^[0-9]{6}$', description: 'The 6 digits the device speaks', examples: ['042917'] } },
      required: ['code'],
      additionalProperties: false,
    },
  })
  async activate({ code }: { code: string }, { principal }: ToolCallContext) {
    try {
      const { deviceId } = await this.activation.activate(code, { principal });
      return { device: deviceId, bound: true };
    } catch (error) {
      throw error instanceof GatewayError ? new ToolError(error.message, { code: error.code }) : error;
    }
  }
}
