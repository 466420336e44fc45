import { Inject, Injectable } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { CLOSE_TRY_AGAIN_LATER } from '../core/ws/connection';
import { ConnectionLimitGuard } from '../core/ws/connection-limit.guard';
import { UpgradeRefusedException } from '../core/ws/upgrade-guard';

/** Past `CLOUD_MAX_CONNECTIONS` open LLM-gateway sockets, a new one is accepted and closed at once with 1013, the spec's answer to a full server (11.1). */
@Injectable()
export class LlmConnectionLimitGuard extends ConnectionLimitGuard {
  protected readonly limit: number;

  constructor(@Inject(GATEWAY_CONFIG) config: GatewayConfig) {
    super();
    this.limit = config.server.maxConnections;
  }

  protected refusal(limit: number): UpgradeRefusedException {
    return new UpgradeRefusedException(503, `Too many connections (at most ${limit})`, {}, CLOSE_TRY_AGAIN_LATER);
  }
}
