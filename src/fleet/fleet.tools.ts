import { Injectable } from '@nestjs/common';
import { GatewayError } from '../core/errors/gateway-error';
import type { ToolCallContext } from '../core/tools/tool-definition';
import { ToolError } from '../core/tools/tool-error';
import { BuiltinTool } from '../core/tools/tool.decorator';
import { pushOutcomeView, receiptView } from './device-push';
import { DevicePushes } from './device-pushes';
import { DEVICE_SAY_MAX_WAIT_S, DEVICE_SAY_SCHEMA, PushBody, ONE_DEVICE_SCHEMA } from './push-request';
import { followReceipts } from './receipts/follow-receipts';
import { FOLLOW_MAX, PushReceipts } from './receipts/push-receipts';

interface SayArguments extends PushBody {
  device_id?: string;
  device_ids?: string[];
  wait_s?: number;
}

/**
 * The fleet as tools: `device_say` makes devices the caller may reach speak, for agents (an
 * MCP client, a home-automation system) and for a device's own model ("tell the kitchen dinner
 * is ready").
 */
@Injectable()
export class FleetTools {
  constructor(
    private readonly pushes: DevicePushes,
    private readonly receipts: PushReceipts,
  ) {}

  @BuiltinTool({
    name: 'device_say',
    presentation: { title: 'Say on devices', annotations: { readOnlyHint: false, destructiveHint: false, openWorldHint: false } },
    description:
      'Makes connected voice devices say a sentence now (each waits for its turn in flight unless interrupt is true): one device by device_id, or many by device_ids (ids and globs such as "kitchen-*"), each answered on its own with a push_id (its delivery receipt). Offline devices: refused, unless hold_s keeps it for the next connection. With wait_s, the call follows the receipts until each is final (spoken, interrupted, expired, refused), reporting each change as progress.',
    inputSchema: DEVICE_SAY_SCHEMA,
    // With wait_s, the call lasts until the receipts are final: its limit is the longest wait, not
    // SERVER_TOOL_TIMEOUT (without it, the push itself is bounded: a replica that does not answer fails it in 5 s).
    timeoutMs: (DEVICE_SAY_MAX_WAIT_S + 10) * 1000,
  })
  async say({ device_id: deviceId, device_ids: deviceIds, text, interrupt, hold_s: holdS, wait_s: waitS = 0 }: SayArguments, context: ToolCallContext) {
    if ((deviceId === undefined) === (deviceIds === undefined))
      throw new ToolError('Give exactly one of device_id and device_ids', { code: 'INVALID_MESSAGE' });
    const { principal } = context;
    if (waitS > 0 && deviceIds && deviceIds.length > FOLLOW_MAX)
      throw new ToolError(`wait_s follows at most ${FOLLOW_MAX} pushes: name fewer devices, or follow their receipts (GET /pushes/<push_id>)`, {
        code: 'INVALID_MESSAGE',
      });
    try {
      if (deviceIds) {
        const results = (await this.pushes.sayToEach(deviceIds, { text, interrupt, holdS }, { principal })).map(pushOutcomeView);
        return { results: waitS > 0 ? await followReceipts(this.receipts, results, waitS, context) : results };
      }
      const result = receiptView(await this.pushes.say(deviceId!, { text, interrupt, holdS }, { principal }));
      return waitS > 0 ? (await followReceipts(this.receipts, [result], waitS, context))[0] : result;
    } catch (error) {
      throw asToolError(error);
    }
  }

  @BuiltinTool({
    name: 'release_device',
    presentation: { title: 'Release a device id', annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false } },
    description:
      'Gives up a device id you own while the device is offline (you sold or replaced it): pushes held for it are dropped, its reminders cancelled, and another account may then connect as that id.',
    inputSchema: ONE_DEVICE_SCHEMA,
  })
  async release({ device_id: deviceId }: { device_id: string }, { principal }: ToolCallContext) {
    try {
      const { held } = await this.pushes.release(deviceId, { principal });
      return { device: deviceId, released: true, held_dropped: held };
    } catch (error) {
      throw asToolError(error);
    }
  }
}

/** A refusal of the fleet as the tool's failure, its code kept. */
function asToolError(error: unknown): unknown {
  return error instanceof GatewayError ? new ToolError(error.message, { code: error.code, ...error.fields }) : error;
}
