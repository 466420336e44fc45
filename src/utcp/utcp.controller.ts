import { Get, Req } from '@nestjs/common';
import type { Request } from 'express';
import type { AuthenticatedRequest } from '../core/auth/bearer-auth.guard';
import { ProtocolController } from '../core/http/protocol-controller.decorator';
import type { UtcpManual } from './utcp.frames';
import { UtcpService } from './utcp.service';

/**
 * HTTP discovery, the UTCP 0.1 spec's `discovery_url` and what 1.x `http` manual templates
 * fetch: `GET /utcp` returns the manual, `GET /utcp?stream=true` one whose templates stream.
 */
@ProtocolController({ protocol: 'utcp', path: 'utcp' })
export class UtcpController {
  constructor(private readonly utcp: UtcpService) {}

  @Get()
  manual(@Req() request: Request & AuthenticatedRequest): UtcpManual {
    return this.utcp.manual(request, request.principal);
  }
}
