import { Body, Controller, Get, Param, Put, Req } from '@nestjs/common';
import type { AuthenticatedRequest } from '../../core/auth/bearer-auth.guard';
import { DeviceBudgetView, DeviceBudgets, DeviceUsageView } from './device-budgets';

/**
 * A device's budget over HTTP, for its owner: `GET /devices/<id>/usage` (per meter and period:
 * used, limit, remaining, resets_at), `GET /devices/<id>/budget` and `PUT /devices/<id>/budget
 * {"llm_tokens_per_day": 20000, ...}` (replaces the owner's limits; `{}` clears them). `404
 * NOT_FOUND` for a device that is not the caller's, `400 INVALID_MESSAGE` for a bad budget.
 */
@Controller('devices')
export class DeviceBudgetsController {
  constructor(private readonly budgets: DeviceBudgets) {}

  @Get(':id/usage')
  usage(@Param('id') id: string, @Req() request: AuthenticatedRequest): Promise<DeviceUsageView> {
    return this.budgets.usage(id, { principal: request.principal });
  }

  @Get(':id/budget')
  budget(@Param('id') id: string, @Req() request: AuthenticatedRequest): Promise<DeviceBudgetView> {
    return this.budgets.budget(id, { principal: request.principal });
  }

  @Put(':id/budget')
  setBudget(@Param('id') id: string, @Body() body: unknown, @Req() request: AuthenticatedRequest): Promise<DeviceBudgetView> {
    return this.budgets.setBudget(id, body, { principal: request.principal });
  }
}
