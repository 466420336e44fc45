import { Module, OnModuleInit } from '@nestjs/common';
import { HttpErrorFormats } from '../core/http/http-error-formats';
import { ProtocolRegistry } from '../core/protocols/protocol-registry';
import { LiteMcpController } from './litemcp.controller';
import { LiteMcpGateway } from './litemcp.gateway';
import { failedCallResult } from './litemcp.mapper';
import { LiteMcpToolPathGuard } from './litemcp-tool-path.guard';
import { LiteMcpService } from './litemcp.service';
import { LITEMCP_DECLARATION } from './litemcp.protocol';

/** LiteMCP over WebSocket and HTTP at `/litemcp/<tool>`; stdio lives in `./stdio`. */
@Module({
  controllers: [LiteMcpController],
  providers: [LiteMcpService, LiteMcpGateway, LiteMcpToolPathGuard],
  exports: [LiteMcpService, LiteMcpGateway],
})
export class LiteMcpModule implements OnModuleInit {
  constructor(
    private readonly errorFormats: HttpErrorFormats,
    private readonly protocols: ProtocolRegistry,
  ) {}

  /** Declares LiteMCP; HTTP failures are LiteMCP's: a POST gets a CallResult with `error: true`, a GET `{error}`. */
  onModuleInit(): void {
    this.protocols.declare(LITEMCP_DECLARATION);
    this.errorFormats.register('/litemcp/', ({ code, message }, request) =>
      request.method === 'POST' ? failedCallResult({}, message) : { error: { code, message } },
    );
  }
}
