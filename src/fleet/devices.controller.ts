import { Body, Controller, Get, HttpCode, Param, Post, Req, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import type { AuthenticatedRequest } from '../core/auth/bearer-auth.guard';
import { httpStatusOfToolFailure } from '../core/errors/tool-failure-status';
import { BEARER_SCHEME, ERROR_BODY_SCHEMA, openApiSchema } from '../core/http/openapi';
import { GatewayError, GatewayErrorCode } from '../core/errors/gateway-error';
import { CallScope } from '../core/http/protocol-controller.decorator';
import type { ToolCallScope } from '../core/tools/tool-call-scope';
import { ToolCallService } from '../core/tools/tool-call.service';
import type { DeviceEntry } from './device-entry';
import { agentToolName } from './device-id';
import { pushOutcomeView, receiptView } from './device-push';
import { isPlainObject } from '../core/plain-object';
import { SchemaValidationPipe } from '../core/validation/schema-validation.pipe';
import { DevicePushes } from './device-pushes';
import { FAN_OUT_BODY_SCHEMA, PushBody, SAY_BODY_SCHEMA, TURN_BODY_SCHEMA } from './push-request';
import { Reachability } from './reachability';
import { DeviceRollouts } from './rollouts/device-rollouts';
import { deviceFirmwareView, DeviceFirmwareView } from './rollouts/device-firmware-view';

/** A device as the HTTP routes show it. */
export interface DeviceView extends DeviceFirmwareView {
  id: string;
  /** The protocol it speaks (`llm`, `xiaozhi`). */
  protocol: string;
  /** Its board and firmware (`board/version`), when it said. */
  user_agent?: string;
  instance: string;
  connected_at: string;
  tools: { name: string; agent_name: string; description: string; input_schema: unknown; visibility: string }[];
}

const viewOf = (entry: DeviceEntry): Omit<DeviceView, keyof DeviceFirmwareView> => ({
  id: entry.id,
  protocol: entry.protocol ?? 'llm',
  ...(entry.userAgent !== undefined && { user_agent: entry.userAgent }),
  instance: entry.instance,
  connected_at: entry.since,
  tools: entry.tools.map((tool) => ({
    name: tool.name,
    agent_name: agentToolName(entry.id, tool.name),
    description: tool.description,
    input_schema: tool.inputSchema,
    visibility: tool.visibility,
  })),
});

/**
 * The fleet over HTTP, behind the bearer check, each caller seeing only the devices it may reach
 * (its own principal's, and those its `devices` globs grant; any other looks offline):
 * `GET /devices`, `GET /devices/<id>`, `POST /devices/<id>/say {"text", "interrupt"?, "hold_s"?}`,
 * `POST /devices/say {"devices", "text", ...}` (one push to many),
 * `POST /devices/<id>/turns {"text", "hold_s"?}`, `POST /devices/<id>/release` (its owner gives
 * the id up), and `POST /devices/<id>/tools/<tool>` with the arguments as the body. Errors are `{"error": {"code", "message"}}` with the code's status
 * (`DEVICE_OFFLINE` 404, `DEVICE_BUSY` 429).
 */
@ApiTags('devices')
@ApiBearerAuth(BEARER_SCHEME)
@ApiResponse({ status: 401, description: 'No token, or one the gateway does not accept', schema: ERROR_BODY_SCHEMA })
@Controller('devices')
export class DevicesController {
  constructor(
    private readonly reachability: Reachability,
    private readonly pushes: DevicePushes,
    private readonly toolCalls: ToolCallService,
    private readonly rollouts: DeviceRollouts,
  ) {}

  @ApiOperation({ summary: 'The devices online that the caller may reach, on every replica' })
  @Get()
  async list(@Req() request: AuthenticatedRequest): Promise<{ devices: DeviceView[] }> {
    const entries = this.reachability.visibleDevices({ principal: request.principal }).sort((a, b) => a.id.localeCompare(b.id));
    return { devices: await Promise.all(entries.map((entry) => this.view(entry))) };
  }

  @ApiOperation({ summary: 'One device online' })
  @ApiResponse({ status: 404, description: "DEVICE_OFFLINE: not connected, or not the caller's", schema: ERROR_BODY_SCHEMA })
  @Get(':id')
  async one(@Param('id') id: string, @Req() request: AuthenticatedRequest): Promise<DeviceView> {
    const entry = this.reachability.visibleDevice({ principal: request.principal }, id);
    if (!entry) throw new GatewayError(GatewayErrorCode.DEVICE_OFFLINE, `Device "${id}" is not connected`);
    return this.view(entry);
  }

  /** The device with its running firmware and what its rollouts offer it. */
  private async view(entry: DeviceEntry): Promise<DeviceView> {
    return { ...viewOf(entry), ...(await deviceFirmwareView(this.rollouts, entry)) };
  }

  /**
   * One `say` to many devices: `{"devices": [ids and globs], "text", "interrupt"?, "hold_s"?}`.
   * Each device is answered on its own, in order: `{"results": [{"device", "delivered",
   * "turn_id"} | {"device", "error": {"code", "message"}}]}`; only a bad request as a whole
   * (no text, no list, too many devices) is an error status.
   */
  @ApiOperation({ summary: 'One push to many devices (ids and globs), each answered on its own' })
  @ApiBody({ schema: openApiSchema(FAN_OUT_BODY_SCHEMA) })
  @Post('say')
  @HttpCode(200)
  async sayToEach(@Body(new SchemaValidationPipe(FAN_OUT_BODY_SCHEMA)) body: PushBody & { devices: string[] }, @Req() request: AuthenticatedRequest) {
    const outcomes = await this.pushes.sayToEach(
      body.devices,
      { text: body.text, interrupt: body.interrupt, holdS: body.hold_s },
      { principal: request.principal },
    );
    return { results: outcomes.map(pushOutcomeView) };
  }

  @ApiOperation({ summary: 'The device says a sentence, now or when it next connects (hold_s)' })
  @ApiBody({ schema: openApiSchema(SAY_BODY_SCHEMA) })
  @ApiResponse({ status: 404, description: 'DEVICE_OFFLINE', schema: ERROR_BODY_SCHEMA })
  @ApiResponse({ status: 429, description: 'DEVICE_BUSY or RATE_LIMITED', schema: ERROR_BODY_SCHEMA })
  @Post(':id/say')
  @HttpCode(200)
  async say(@Param('id') id: string, @Body(new SchemaValidationPipe(SAY_BODY_SCHEMA)) body: PushBody, @Req() request: AuthenticatedRequest) {
    const receipt = await this.pushes.say(id, { text: body.text, interrupt: body.interrupt, holdS: body.hold_s }, { principal: request.principal });
    return receiptView(receipt);
  }

  @ApiOperation({ summary: "A turn started as if the device's user had said the text" })
  @ApiBody({ schema: openApiSchema(TURN_BODY_SCHEMA) })
  @ApiResponse({ status: 404, description: 'DEVICE_OFFLINE', schema: ERROR_BODY_SCHEMA })
  @Post(':id/turns')
  @HttpCode(200)
  async turn(@Param('id') id: string, @Body(new SchemaValidationPipe(TURN_BODY_SCHEMA)) body: PushBody, @Req() request: AuthenticatedRequest) {
    const receipt = await this.pushes.startTurn(id, { text: body.text, holdS: body.hold_s }, { principal: request.principal });
    return receiptView(receipt);
  }

  /**
   * The owner gives the device id up while the device is offline: what is held for it is dropped,
   * its reminders cancelled, and another token may connect as it. `{"device", "released": true,
   * "held_dropped"}`; `404 NOT_FOUND` for an id that is not the caller's, `409 DEVICE_ID_TAKEN`
   * while it is connected.
   */
  @ApiOperation({ summary: 'The owner gives the device id up while the device is offline' })
  @ApiResponse({ status: 404, description: "NOT_FOUND: not the caller's id", schema: ERROR_BODY_SCHEMA })
  @ApiResponse({ status: 409, description: 'DEVICE_ID_TAKEN: the device is connected', schema: ERROR_BODY_SCHEMA })
  @Post(':id/release')
  @HttpCode(200)
  async release(@Param('id') id: string, @Req() request: AuthenticatedRequest) {
    const { held } = await this.pushes.release(id, { principal: request.principal });
    return { device: id, released: true, held_dropped: held };
  }

  /** Calls a tool of the device as agents do (the same catalogue entry, limits, audit and metrics): `{"result"}`, or the failure with its status. */
  @ApiOperation({ summary: "Calls a tool of the device as agents do; the body is the tool's arguments" })
  @ApiBody({ schema: { type: 'object', additionalProperties: true } })
  @ApiResponse({ status: 200, description: '`{"result"}`' })
  @ApiResponse({ status: 404, description: 'DEVICE_OFFLINE', schema: ERROR_BODY_SCHEMA })
  @Post(':id/tools/:tool')
  async call(
    @Param('id') id: string,
    @Param('tool') tool: string,
    @Body() raw: unknown,
    @Req() request: AuthenticatedRequest,
    @Res() response: Response,
    @CallScope() scope: ToolCallScope,
  ): Promise<void> {
    if (raw !== undefined && !isPlainObject(raw))
      throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, "The body must be a JSON object of the tool's arguments");
    const args = raw ?? {};
    if (!this.reachability.visibleDevice({ principal: request.principal }, id))
      throw new GatewayError(GatewayErrorCode.DEVICE_OFFLINE, `Device "${id}" is not connected`);
    const outcome = await this.toolCalls.call(scope, agentToolName(id, tool), args);
    if (scope.signal?.aborted) return;
    if (outcome.ok) response.status(200).json({ result: outcome.value ?? null });
    else response.status(httpStatusOfToolFailure(outcome)).json({ error: { code: outcome.code, message: outcome.message } });
  }
}
