import { Module } from '@nestjs/common';
import { UtcpController } from './utcp.controller';
import { UtcpEndpointGuard } from './utcp-endpoint.guard';
import { UtcpGateway } from './utcp.gateway';
import { UtcpToolGateway } from './utcp-tool.gateway';
import { UtcpService } from './utcp.service';

/** UTCP: the manual over HTTP (`GET /utcp`), the 0.1 provider at `/utcp`, 1.x per-tool paths at `/utcp/<tool>`. */
@Module({
  controllers: [UtcpController],
  providers: [UtcpService, UtcpGateway, UtcpToolGateway, UtcpEndpointGuard],
})
export class UtcpModule {}
