import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Req } from '@nestjs/common';
import type { AuthenticatedRequest } from '../../core/auth/bearer-auth.guard';
import { GatewayError, GatewayErrorCode } from '../../core/errors/gateway-error';
import { isPlainObject } from '../../core/plain-object';
import { DeviceRollouts } from './device-rollouts';
import { firmwareChange, firmwareInput, rolloutInput } from './rollout-input';
import { recordView } from './rollout-model';

/**
 * Firmware rollouts over HTTP, behind the bearer check, each principal managing its own records:
 * `GET|POST /fleet/firmware`, `GET|PATCH|DELETE /fleet/firmware/<id>`; `GET|POST /fleet/rollouts`,
 * `GET|DELETE /fleet/rollouts/<id>`, `POST /fleet/rollouts/<id>/widen {"percent"}`,
 * `POST /fleet/rollouts/<id>/pause|resume|stop`. (Under `/fleet`, not `/devices`, where
 * `GET /devices/<id>` names a device.) Errors are `{"error": {"code", "message"}}`:
 * `INVALID_MESSAGE` 400 for bad input, `NOT_FOUND` 404 for another principal's record.
 */
@Controller('fleet')
export class RolloutsController {
  constructor(private readonly rollouts: DeviceRollouts) {}

  @Get('firmware')
  async listFirmware(@Req() request: AuthenticatedRequest) {
    return { firmware: (await this.rollouts.listFirmware(request)).map(recordView) };
  }

  @Post('firmware')
  @HttpCode(201)
  addFirmware(@Body() body: unknown, @Req() request: AuthenticatedRequest) {
    return this.rollouts.addFirmware(request, firmwareInput(body)).then(recordView);
  }

  @Get('firmware/:id')
  firmware(@Param('id') id: string, @Req() request: AuthenticatedRequest) {
    return this.rollouts.firmware(request, id).then(recordView);
  }

  @Patch('firmware/:id')
  changeFirmware(@Param('id') id: string, @Body() body: unknown, @Req() request: AuthenticatedRequest) {
    return this.rollouts.changeFirmware(request, id, firmwareChange(body)).then(recordView);
  }

  @Delete('firmware/:id')
  async removeFirmware(@Param('id') id: string, @Req() request: AuthenticatedRequest) {
    await this.rollouts.removeFirmware(request, id);
    return { id, removed: true };
  }

  @Get('rollouts')
  async listRollouts(@Req() request: AuthenticatedRequest) {
    return { rollouts: (await this.rollouts.listRollouts(request)).map(recordView) };
  }

  @Post('rollouts')
  @HttpCode(201)
  createRollout(@Body() body: unknown, @Req() request: AuthenticatedRequest) {
    return this.rollouts.createRollout(request, rolloutInput(body)).then(recordView);
  }

  @Get('rollouts/:id')
  rollout(@Param('id') id: string, @Req() request: AuthenticatedRequest) {
    return this.rollouts.rollout(request, id).then(recordView);
  }

  @Post('rollouts/:id/widen')
  @HttpCode(200)
  widen(@Param('id') id: string, @Body() body: unknown, @Req() request: AuthenticatedRequest) {
    if (!isPlainObject(body) || Object.keys(body).some((key) => key !== 'percent'))
      throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, 'The body must be {"percent": <0 to 100>}');
    return this.rollouts.widen(request, id, body.percent).then(recordView);
  }

  @Post('rollouts/:id/pause')
  @HttpCode(200)
  pause(@Param('id') id: string, @Req() request: AuthenticatedRequest) {
    return this.rollouts.setState(request, id, 'paused').then(recordView);
  }

  @Post('rollouts/:id/resume')
  @HttpCode(200)
  resume(@Param('id') id: string, @Req() request: AuthenticatedRequest) {
    return this.rollouts.setState(request, id, 'active').then(recordView);
  }

  @Post('rollouts/:id/stop')
  @HttpCode(200)
  stop(@Param('id') id: string, @Req() request: AuthenticatedRequest) {
    return this.rollouts.setState(request, id, 'stopped').then(recordView);
  }

  @Delete('rollouts/:id')
  async removeRollout(@Param('id') id: string, @Req() request: AuthenticatedRequest) {
    await this.rollouts.removeRollout(request, id);
    return { id, removed: true };
  }
}
