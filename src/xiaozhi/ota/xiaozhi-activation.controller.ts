import { Controller, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { Public } from '../../core/auth/route-access';
import { GatewayError, GatewayErrorCode } from '../../core/errors/gateway-error';
import { isPlainObject } from '../../core/plain-object';
import { ActivationService } from '../../fleet/activation/activation.service';
import { deviceIdProblem } from '../../fleet/device-id';

const header = (request: Request, name: string): string | undefined => {
  const value = request.headers[name];
  return (Array.isArray(value) ? value[0] : value)?.slice(0, 256);
};

/**
 * The firmware's activation polling (`Ota::Activate`: `POST <ota url>activate`, every 3 s while
 * it shows its code): 202 while its owner has not entered the code, 200 once bound. A
 * serial-number device's body is `{"algorithm": "hmac-sha256", "serial_number", "challenge",
 * "hmac"}`: a wrong HMAC is refused (403, which the firmware logs with the body, then waits
 * 10 s). Public, as the configuration request is: the device has no credential yet.
 */
@Controller('xiaozhi/ota')
@Public()
export class XiaozhiActivationController {
  constructor(@Inject(ActivationService) private readonly activation: ActivationService) {}

  @Post('activate')
  @HttpCode(200)
  async poll(@Req() request: Request, @Res({ passthrough: true }) response: Response): Promise<{ status: string }> {
    if (!this.activation.enabled) throw new GatewayError(GatewayErrorCode.NOT_FOUND, 'Device activation is off (XIAOZHI_ACTIVATION)');
    const deviceId = header(request, 'device-id');
    const problem = deviceId === undefined ? 'the Device-Id header is required' : deviceIdProblem(deviceId);
    if (problem) throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, `Device-Id: ${problem}`);
    const body: unknown = request.body;
    const payload = isPlainObject(body) ? body : {};
    const answer = await this.activation.poll(deviceId!, header(request, 'client-id') ?? '', payload);
    response.status(answer);
    return { status: answer === 200 ? 'activated' : 'waiting for the owner to enter the code' };
  }
}
