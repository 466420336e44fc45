import { Controller, Get, Param, Req } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { AuthenticatedRequest } from '../../core/auth/bearer-auth.guard';
import { BEARER_SCHEME, ERROR_BODY_SCHEMA } from '../../core/http/openapi';
import { GatewayError, GatewayErrorCode } from '../../core/errors/gateway-error';
import { PushReceipts, type ReceiptView } from './push-receipts';

/** Longest push id looked up: ours are 41 characters (`push-<uuid>`); reminders' a little more. */
const MAX_ID_LENGTH = 128;

/**
 * `GET /pushes/<id>`, behind the bearer check: the delivery receipt of a push, `{id, device,
 * kind, state, history: [{state, at, reason?}], turn_id, reminder_id?, expires_at?}`, from any
 * replica. Only the principal that pushed it and the device's owner see it; to anyone else, as
 * for an id that is unknown or no longer kept, `404 NOT_FOUND`.
 */
@ApiTags('devices')
@ApiBearerAuth(BEARER_SCHEME)
@Controller('pushes')
export class PushesController {
  constructor(private readonly receipts: PushReceipts) {}

  @ApiOperation({ summary: 'The delivery receipt of a push: queued, held, sent, spoken, interrupted, expired or refused, with its history' })
  @ApiResponse({ status: 404, description: "NOT_FOUND: unknown, no longer kept, or not the caller's", schema: ERROR_BODY_SCHEMA })
  @Get(':id')
  async one(@Param('id') id: string, @Req() request: AuthenticatedRequest): Promise<ReceiptView> {
    const receipt = id.length <= MAX_ID_LENGTH ? await this.receipts.view(id, { principal: request.principal }) : undefined;
    if (!receipt) throw new GatewayError(GatewayErrorCode.NOT_FOUND, `No push "${id.slice(0, MAX_ID_LENGTH)}" of yours is known`);
    return receipt;
  }
}
