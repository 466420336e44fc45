import { Inject, Injectable } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';
import { ConnectionLimitGuard } from './connection-limit.guard';
import { UpgradeRefusedException } from './upgrade-guard';

/**
 * `WS_MAX_CONNECTIONS_PER_PROTOCOL` for the protocols whose specs set no cap of their own
 * (LiteMCP, UTCP): past it an upgrade is refused with 503 and `Retry-After`.
 */
@Injectable()
export class ProtocolConnectionLimitGuard extends ConnectionLimitGuard {
  protected readonly limit: number;

  constructor(@Inject(GATEWAY_CONFIG) config: GatewayConfig) {
    super();
    this.limit = config.connections.perProtocol;
  }

  protected refusal(limit: number): UpgradeRefusedException {
    return new UpgradeRefusedException(503, `Too many connections on this protocol: at most ${limit} (WS_MAX_CONNECTIONS_PER_PROTOCOL)`, { 'Retry-After': '1' });
  }
}
