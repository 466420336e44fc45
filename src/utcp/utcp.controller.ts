import { Controller, Get, Req, UseGuards } from '@nestjs/common';
import type { Request } from 'express';
import { AuthenticatedRequest, BearerAuthGuard } from '../core/auth/bearer-auth.guard';
import { GatewayProtocol } from '../core/auth/gateway-protocol.decorator';
import type { UtcpManual } from './utcp.frames';
import { UtcpService } from './utcp.service';

/**
 * HTTP discovery, the UTCP 0.1 spec's `discovery_url` and what 1.x `http` manual templates
 * fetch: `GET /utcp` returns the manual, `GET /utcp?stream=true` one whose templates stream.
 */
@Controller('utcp')
@GatewayProtocol('utcp')
@UseGuards(BearerAuthGuard)
export class UtcpController {
  constructor(private readonly utcp: UtcpService) {}

  @Get()
  manual(@Req() request: Request & AuthenticatedRequest): UtcpManual {
    return this.utcp.manual(request, request.principal);
  }
}
