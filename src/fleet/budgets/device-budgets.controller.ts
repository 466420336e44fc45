import { Body, Controller, Get, Param, Put, Req } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { AuthenticatedRequest } from '../../core/auth/bearer-auth.guard';
import { LIMIT_NAMES } from '../../core/budgets/budget-meters';
import { BEARER_SCHEME, ERROR_BODY_SCHEMA } from '../../core/http/openapi';
import { DeviceBudgetView, DeviceBudgets, DeviceUsageView } from './device-budgets';

/**
 * A device's budget over HTTP, for its owner: `GET /devices/<id>/usage` (per meter and period:
 * used, limit, remaining, resets_at), `GET /devices/<id>/budget` and `PUT /devices/<id>/budget
 * {"llm_tokens_per_day": 20000, ...}` (replaces the owner's limits; `{}` clears them). `404
 * NOT_FOUND` for a device that is not the caller's, `400 INVALID_MESSAGE` for a bad budget.
 */
@ApiTags('devices')
@ApiBearerAuth(BEARER_SCHEME)
@ApiResponse({ status: 404, description: "NOT_FOUND: the device is not the caller's", schema: ERROR_BODY_SCHEMA })
@Controller('devices')
export class DeviceBudgetsController {
  constructor(private readonly budgets: DeviceBudgets) {}

  @ApiOperation({ summary: "The device's usage per meter and UTC period: used, limit, remaining, resets_at" })
  @Get(':id/usage')
  usage(@Param('id') id: string, @Req() request: AuthenticatedRequest): Promise<DeviceUsageView> {
    return this.budgets.usage(id, { principal: request.principal });
  }

  @ApiOperation({ summary: "The owner's limits for the device, and the tokens file's" })
  @Get(':id/budget')
  budget(@Param('id') id: string, @Req() request: AuthenticatedRequest): Promise<DeviceBudgetView> {
    return this.budgets.budget(id, { principal: request.principal });
  }

  @ApiOperation({ summary: "Replaces the owner's limits for the device (`{}` clears them); the stricter of these and the tokens file's apply" })
  @ApiBody({
    schema: {
      type: 'object',
      properties: Object.fromEntries(LIMIT_NAMES.map((name) => [name, { type: 'integer', minimum: 1 }])),
      additionalProperties: false,
      example: { llm_tokens_per_day: 20000, tts_chars_per_month: 100000 },
    },
  })
  @ApiResponse({ status: 400, description: 'INVALID_MESSAGE: an unknown limit, or one that is not a positive integer', schema: ERROR_BODY_SCHEMA })
  @Put(':id/budget')
  setBudget(@Param('id') id: string, @Body() body: unknown, @Req() request: AuthenticatedRequest): Promise<DeviceBudgetView> {
    return this.budgets.setBudget(id, body, { principal: request.principal });
  }
}
