import { Body, Controller, HttpCode, Param, Post, Put, Req } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { AuthenticatedRequest } from '../../core/auth/bearer-auth.guard';
import { BEARER_SCHEME, ERROR_BODY_SCHEMA, openApiSchema } from '../../core/http/openapi';
import { AccessTokenService } from '../../core/auth/access-token.service';
import { hasFullAccess } from '../../core/auth/grant';
import { GatewayError, GatewayErrorCode } from '../../core/errors/gateway-error';
import { SchemaValidationPipe } from '../../core/validation/schema-validation.pipe';
import { ActivationService, type Activator } from './activation.service';

const ACTIVATE_BODY_SCHEMA = {
  type: 'object',
  properties: { code: { type: 'string', minLength: 1, maxLength: 16, description: 'The 6 digits the device speaks' } },
  required: ['code'],
  additionalProperties: false,
} as const;

const KEY_BODY_SCHEMA = {
  type: 'object',
  properties: { key: { type: 'string', pattern: '^[0-9a-fA-F]{64}$', description: "The device's HMAC key (eFuse key 0), 32 bytes as hex" } },
  required: ['key'],
  additionalProperties: false,
} as const;

const activatorOf = (request: AuthenticatedRequest): Activator => ({ principal: request.principal, address: request.socket?.remoteAddress });

/**
 * Activation and device credentials over HTTP, behind the bearer check (`XIAOZHI_ACTIVATION=required`):
 * `POST /devices/activate {"code"}` binds the device that speaks the code to the caller;
 * `POST /devices/<id>/credential/rotate` has its next configuration answer carry a new secret;
 * `POST /devices/<id>/credential/revoke` drops its secret and closes its connections everywhere;
 * `POST /devices/<id>/unbind` ends the binding; `PUT /devices/<id>/activation-key {"key"}` (a
 * full-access token) provisions a serial-number device's HMAC key. Errors are
 * `{"error": {"code", "message"}}`: a wrong code is always `404 NOT_FOUND`, a limit `429 RATE_LIMITED`.
 */
@ApiTags('devices')
@ApiBearerAuth(BEARER_SCHEME)
@ApiResponse({ status: 404, description: "NOT_FOUND: a wrong, spent or expired code, or a device that is not the caller's", schema: ERROR_BODY_SCHEMA })
@Controller('devices')
export class ActivationController {
  constructor(
    private readonly activation: ActivationService,
    private readonly tokens: AccessTokenService,
  ) {}

  @ApiOperation({ summary: 'Binds the device that speaks this code to the caller (XIAOZHI_ACTIVATION=required)' })
  @ApiBody({ schema: openApiSchema(ACTIVATE_BODY_SCHEMA) })
  @ApiResponse({ status: 429, description: 'RATE_LIMITED: too many attempts (Retry-After)', schema: ERROR_BODY_SCHEMA })
  @Post('activate')
  @HttpCode(200)
  async activate(@Body(new SchemaValidationPipe(ACTIVATE_BODY_SCHEMA)) body: { code: string }, @Req() request: AuthenticatedRequest) {
    const { deviceId } = await this.activation.activate(body.code, activatorOf(request));
    return { device: deviceId, bound: true };
  }

  @ApiOperation({ summary: "The device's next configuration answer carries a new secret" })
  @Post(':id/credential/rotate')
  @HttpCode(200)
  async rotate(@Param('id') id: string, @Req() request: AuthenticatedRequest) {
    await this.activation.rotate(id, activatorOf(request));
    return { device: id, rotation: 'at its next configuration request' };
  }

  @ApiOperation({ summary: "Drops the device's secret and closes its connections on every replica" })
  @Post(':id/credential/revoke')
  @HttpCode(200)
  async revoke(@Param('id') id: string, @Req() request: AuthenticatedRequest) {
    await this.activation.revoke(id, activatorOf(request));
    return { device: id, revoked: true };
  }

  @ApiOperation({ summary: 'Ends the binding: the secret goes and the id is free once the device is offline' })
  @Post(':id/unbind')
  @HttpCode(200)
  async unbind(@Param('id') id: string, @Req() request: AuthenticatedRequest) {
    await this.activation.unbind(id, activatorOf(request));
    return { device: id, unbound: true };
  }

  @ApiOperation({ summary: "Provisions a serial-number device's HMAC key (a full-access token)" })
  @ApiBody({ schema: openApiSchema(KEY_BODY_SCHEMA) })
  @ApiResponse({ status: 403, description: 'FORBIDDEN: not a full-access token', schema: ERROR_BODY_SCHEMA })
  @Put(':id/activation-key')
  @HttpCode(200)
  async setKey(@Param('id') id: string, @Body(new SchemaValidationPipe(KEY_BODY_SCHEMA)) body: { key: string }, @Req() request: AuthenticatedRequest) {
    if (!hasFullAccess(this.tokens.grantOf(request.principal)))
      throw new GatewayError(GatewayErrorCode.FORBIDDEN, "Provisioning a device's activation key needs a token with full access");
    await this.activation.setKey(id, body.key, activatorOf(request));
    return { device: id, activation_key: 'set' };
  }
}
