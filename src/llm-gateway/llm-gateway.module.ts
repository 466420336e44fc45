import { Module } from '@nestjs/common';
import { DrainService } from '../core/lifecycle/drain.service';
import { ConnectionRegistry } from '../core/ws/connection-registry';
import { CLOSE_GOING_AWAY } from '../core/ws/gateway-ws.adapter';
import { HealthModule } from '../health/health.module';
import { HealthService } from '../health/health.service';
import { ClientToolsService } from './client-tools.service';
import { LlmConnectionLimitGuard } from './llm-connection-limit.guard';
import { LLM_PROTOCOL, LlmGateway } from './llm-gateway.gateway';
import { SessionBindingService } from './session-binding.service';
import { TurnService } from './turn.service';

/** The voice assistant's WebSocket API (LLM gateway spec) at `/` and `/llm`. */
@Module({
  imports: [HealthModule],
  providers: [LlmGateway, SessionBindingService, TurnService, ClientToolsService, LlmConnectionLimitGuard],
})
export class LlmGatewayModule {
  constructor(health: HealthService, drain: DrainService, connections: ConnectionRegistry) {
    health.register('llm_gateway', { critical: false, check: () => ({ state: 'up', connections: connections.count(LLM_PROTOCOL) }) });
    // On shutdown each device gets its answer in flight, then a close frame telling it to reconnect.
    drain.register('llm_gateway', async () => {
      await Promise.all(connections.list(LLM_PROTOCOL).map((connection) => connection.closeWhenIdle(CLOSE_GOING_AWAY, 'Server shutting down')));
    });
  }
}
