import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Req } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { AuthenticatedRequest } from '../../core/auth/bearer-auth.guard';
import { BEARER_SCHEME, ERROR_BODY_SCHEMA, openApiSchema } from '../../core/http/openapi';
import { GatewayError, GatewayErrorCode } from '../../core/errors/gateway-error';
import { isPlainObject } from '../../core/plain-object';
import { DeviceRollouts } from './device-rollouts';
import { FIRMWARE_INPUT_SCHEMA, firmwareChange, firmwareInput, ROLLOUT_INPUT_SCHEMA, rolloutInput } from './rollout-input';
import { recordView } from './rollout-model';

/**
 * Firmware rollouts over HTTP, behind the bearer check, each principal managing its own records:
 * `GET|POST /fleet/firmware`, `GET|PATCH|DELETE /fleet/firmware/<id>`; `GET|POST /fleet/rollouts`,
 * `GET|DELETE /fleet/rollouts/<id>`, `POST /fleet/rollouts/<id>/widen {"percent"}`,
 * `POST /fleet/rollouts/<id>/pause|resume|stop`. (Under `/fleet`, not `/devices`, where
 * `GET /devices/<id>` names a device.) Errors are `{"error": {"code", "message"}}`:
 * `INVALID_MESSAGE` 400 for bad input, `NOT_FOUND` 404 for another principal's record.
 */
@ApiTags('fleet')
@ApiBearerAuth(BEARER_SCHEME)
@ApiResponse({ status: 400, description: 'INVALID_MESSAGE', schema: ERROR_BODY_SCHEMA })
@ApiResponse({ status: 404, description: "NOT_FOUND: no such record of the caller's", schema: ERROR_BODY_SCHEMA })
@Controller('fleet')
export class RolloutsController {
  constructor(private readonly rollouts: DeviceRollouts) {}

  @ApiOperation({ summary: 'The firmware builds the caller declared' })
  @Get('firmware')
  async listFirmware(@Req() request: AuthenticatedRequest) {
    return { firmware: (await this.rollouts.listFirmware(request)).map(recordView) };
  }

  @ApiOperation({ summary: 'Declares a firmware build rollouts may offer' })
  @ApiBody({ schema: openApiSchema(FIRMWARE_INPUT_SCHEMA) })
  @Post('firmware')
  @HttpCode(201)
  addFirmware(@Body() body: unknown, @Req() request: AuthenticatedRequest) {
    return this.rollouts.addFirmware(request, firmwareInput(body)).then(recordView);
  }

  @ApiOperation({ summary: 'One firmware entry' })
  @Get('firmware/:id')
  firmware(@Param('id') id: string, @Req() request: AuthenticatedRequest) {
    return this.rollouts.firmware(request, id).then(recordView);
  }

  @ApiOperation({ summary: "Changes an entry's url, boards or notes" })
  @Patch('firmware/:id')
  changeFirmware(@Param('id') id: string, @Body() body: unknown, @Req() request: AuthenticatedRequest) {
    return this.rollouts.changeFirmware(request, id, firmwareChange(body)).then(recordView);
  }

  @ApiOperation({ summary: 'Removes a firmware entry' })
  @Delete('firmware/:id')
  async removeFirmware(@Param('id') id: string, @Req() request: AuthenticatedRequest) {
    await this.rollouts.removeFirmware(request, id);
    return { id, removed: true };
  }

  @ApiOperation({ summary: "The caller's rollouts and endpoint moves" })
  @Get('rollouts')
  async listRollouts(@Req() request: AuthenticatedRequest) {
    return { rollouts: (await this.rollouts.listRollouts(request)).map(recordView) };
  }

  @ApiOperation({ summary: 'Offers a build and/or an endpoint to a group: ids, globs or a stable percent of your devices' })
  @ApiBody({ schema: openApiSchema(ROLLOUT_INPUT_SCHEMA) })
  @Post('rollouts')
  @HttpCode(201)
  createRollout(@Body() body: unknown, @Req() request: AuthenticatedRequest) {
    return this.rollouts.createRollout(request, rolloutInput(body)).then(recordView);
  }

  @ApiOperation({ summary: 'One rollout' })
  @Get('rollouts/:id')
  rollout(@Param('id') id: string, @Req() request: AuthenticatedRequest) {
    return this.rollouts.rollout(request, id).then(recordView);
  }

  @ApiOperation({ summary: 'Widens a percent rollout: devices already in stay in' })
  @ApiBody({ schema: { type: 'object', properties: { percent: { type: 'number', minimum: 0, maximum: 100 } }, required: ['percent'] } })
  @Post('rollouts/:id/widen')
  @HttpCode(200)
  widen(@Param('id') id: string, @Body() body: unknown, @Req() request: AuthenticatedRequest) {
    if (!isPlainObject(body) || Object.keys(body).some((key) => key !== 'percent'))
      throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, 'The body must be {"percent": <0 to 100>}');
    return this.rollouts.widen(request, id, body.percent).then(recordView);
  }

  @ApiOperation({ summary: 'Offers nothing until resumed' })
  @Post('rollouts/:id/pause')
  @HttpCode(200)
  pause(@Param('id') id: string, @Req() request: AuthenticatedRequest) {
    return this.rollouts.setState(request, id, 'paused').then(recordView);
  }

  @ApiOperation({ summary: 'Resumes a paused rollout' })
  @Post('rollouts/:id/resume')
  @HttpCode(200)
  resume(@Param('id') id: string, @Req() request: AuthenticatedRequest) {
    return this.rollouts.setState(request, id, 'active').then(recordView);
  }

  @ApiOperation({ summary: 'Offers nothing, for good' })
  @Post('rollouts/:id/stop')
  @HttpCode(200)
  stop(@Param('id') id: string, @Req() request: AuthenticatedRequest) {
    return this.rollouts.setState(request, id, 'stopped').then(recordView);
  }

  @ApiOperation({ summary: 'Removes a rollout' })
  @Delete('rollouts/:id')
  async removeRollout(@Param('id') id: string, @Req() request: AuthenticatedRequest) {
    await this.rollouts.removeRollout(request, id);
    return { id, removed: true };
  }
}
