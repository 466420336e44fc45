import { Controller, Get, Req, UseGuards } from '@nestjs/common';
import type { Request } from 'express';
import { BearerAuthGuard } from '../core/auth/bearer-auth.guard';
import type { UtcpManual } from './utcp.frames';
import { UtcpService } from './utcp.service';

/**
 * HTTP discovery, the UTCP 0.1 spec's `discovery_url` and what 1.x `http` manual templates
 * fetch: `GET /utcp` returns the manual, `GET /utcp?stream=true` one whose templates stream.
 */
@Controller('utcp')
@UseGuards(BearerAuthGuard)
export class UtcpController {
  constructor(private readonly utcp: UtcpService) {}

  @Get()
  manual(@Req() request: Request): UtcpManual {
    return this.utcp.manual(request);
  }
}
