import { Module, OnModuleInit } from '@nestjs/common';
import { HttpErrorFormats } from '../core/http/http-error-formats';
import { ProtocolRegistry } from '../core/protocols/protocol-registry';
import { UtcpController } from './utcp.controller';
import { UtcpEndpointGuard } from './utcp-endpoint.guard';
import { UtcpGateway } from './utcp.gateway';
import { UtcpToolController } from './utcp-tool.controller';
import { UtcpToolGateway } from './utcp-tool.gateway';
import { toolErrorBody } from './utcp.frames';
import { UtcpService } from './utcp.service';
import { UTCP_DECLARATION } from './utcp.protocol';

/**
 * UTCP: the manual over HTTP (`GET /utcp`), the 0.1 provider at `/utcp`, 1.x per-tool paths at
 * `/utcp/<tool>` over WebSocket and HTTP `POST`.
 */
@Module({
  controllers: [UtcpController, UtcpToolController],
  providers: [UtcpService, UtcpGateway, UtcpToolGateway, UtcpEndpointGuard],
})
export class UtcpModule implements OnModuleInit {
  constructor(
    private readonly errorFormats: HttpErrorFormats,
    private readonly protocols: ProtocolRegistry,
  ) {}

  /** Declares UTCP; HTTP failures on a tool's path (auth, an unreadable or oversized body...) are a `tool_error`, as on its WebSocket. */
  onModuleInit(): void {
    this.protocols.declare(UTCP_DECLARATION);
    this.errorFormats.register('/utcp/', ({ code, message }) => toolErrorBody({ code, message }));
  }
}
