import { Injectable } from '@nestjs/common';
import { GatewayError } from '../../core/errors/gateway-error';
import type { ToolCallContext } from '../../core/tools/tool-definition';
import { ToolError } from '../../core/tools/tool-error';
import { BuiltinTool } from '../../core/tools/tool.decorator';
import { DeviceRollouts } from './device-rollouts';
import { recordView } from './rollout-model';
import { FIRMWARE_INPUT_SCHEMA, firmwareInput, ROLLOUT_INPUT_SCHEMA, rolloutInput } from './rollout-input';

const READ_ONLY = { readOnlyHint: true, openWorldHint: false } as const;
const CHANGES = { readOnlyHint: false, destructiveHint: false, openWorldHint: false } as const;

/**
 * Firmware rollouts as tools, for agents that run a fleet: the same records, checks and audit
 * as `/fleet/firmware` and `/fleet/rollouts`, each caller managing its own.
 */
@Injectable()
export class RolloutTools {
  constructor(private readonly rollouts: DeviceRollouts) {}

  @BuiltinTool({
    name: 'fleet_firmware_list',
    presentation: { title: 'List firmware entries', annotations: READ_ONLY },
    description: 'Lists the firmware builds you declared for your devices (version, download URL, boards).',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
  })
  async listFirmware(_: unknown, { principal }: ToolCallContext) {
    return { firmware: (await this.run(() => this.rollouts.listFirmware({ principal }))).map(recordView) };
  }

  @BuiltinTool({
    name: 'fleet_firmware_add',
    presentation: { title: 'Declare a firmware build', annotations: CHANGES },
    description:
      "Declares a firmware build devices may be offered by a rollout: its version (numbers and dots, as the firmware compares them), where devices download it, and the boards (names or globs of the User-Agent's first half) it is built for.",
    inputSchema: FIRMWARE_INPUT_SCHEMA,
  })
  addFirmware(args: unknown, { principal }: ToolCallContext) {
    return this.run(() => this.rollouts.addFirmware({ principal }, firmwareInput(args))).then(recordView);
  }

  @BuiltinTool({
    name: 'fleet_rollout_list',
    presentation: { title: 'List rollouts', annotations: READ_ONLY },
    description: 'Lists your firmware rollouts and endpoint moves, with their group and state.',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
  })
  async listRollouts(_: unknown, { principal }: ToolCallContext) {
    return { rollouts: (await this.run(() => this.rollouts.listRollouts({ principal }))).map(recordView) };
  }

  @BuiltinTool({
    name: 'fleet_rollout_create',
    presentation: { title: 'Start a rollout', annotations: CHANGES },
    description:
      'Offers one of your firmware builds, and/or a new WebSocket URL or MQTT endpoint, to a group of devices at their next configuration request: by devices (ids), globs (over ids) or percent (a stable share of your own devices that only grows as you widen it). Where several rollouts name a device, ids win over globs, globs over a share, and the newest among equals.',
    inputSchema: ROLLOUT_INPUT_SCHEMA,
  })
  createRollout(args: unknown, { principal }: ToolCallContext) {
    return this.run(() => this.rollouts.createRollout({ principal }, rolloutInput(args))).then(recordView);
  }

  @BuiltinTool({
    name: 'fleet_rollout_change',
    presentation: { title: 'Widen, pause, resume or stop a rollout', annotations: { ...CHANGES, idempotentHint: true } },
    description:
      'Changes one of your rollouts: widen (a percent group, to a larger percent: devices already in stay in), pause (offers nothing until resumed), resume, or stop (offers nothing, for good).',
    inputSchema: {
      type: 'object',
      properties: {
        rollout_id: { type: 'string' },
        action: { type: 'string', enum: ['widen', 'pause', 'resume', 'stop'] },
        percent: { type: 'number', minimum: 0, maximum: 100, description: 'With widen: the new share' },
      },
      required: ['rollout_id', 'action'],
      additionalProperties: false,
    },
  })
  changeRollout({ rollout_id: id, action, percent }: { rollout_id: string; action: string; percent?: number }, { principal }: ToolCallContext) {
    return this.run(() => {
      if (action === 'widen') return this.rollouts.widen({ principal }, id, percent);
      if (percent !== undefined) throw new ToolError('percent goes with widen only', { code: 'INVALID_MESSAGE' });
      return this.rollouts.setState({ principal }, id, action === 'pause' ? 'paused' : action === 'resume' ? 'active' : 'stopped');
    }).then(recordView);
  }

  /** A refusal as the tool's failure, its code kept. */
  private async run<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw error instanceof GatewayError ? new ToolError(error.message, { code: error.code }) : error;
    }
  }
}
