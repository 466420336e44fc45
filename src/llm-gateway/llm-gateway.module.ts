import { Module } from '@nestjs/common';
import { DrainService } from '../core/lifecycle/drain.service';
import { CLOSE_GOING_AWAY } from '../core/ws/gateway-ws.adapter';
import { HealthModule } from '../health/health.module';
import { HealthService } from '../health/health.service';
import { ClientToolsService } from './client-tools.service';
import { ConversationService } from './conversation.service';
import { LlmConnectionLimitGuard } from './llm-connection-limit.guard';
import { LlmConnectionRegistry } from './llm-connection.registry';
import { LlmGateway } from './llm-gateway.gateway';
import { SpeechCleaningInterceptor } from './speech-cleaning.interceptor';

/** The voice assistant's WebSocket API (LLM gateway spec) at `/` and `/llm`. */
@Module({
  imports: [HealthModule],
  providers: [
    LlmGateway,
    ConversationService,
    ClientToolsService,
    LlmConnectionRegistry,
    LlmConnectionLimitGuard,
    SpeechCleaningInterceptor,
  ],
})
export class LlmGatewayModule {
  constructor(health: HealthService, drain: DrainService, connections: LlmConnectionRegistry) {
    health.register('llm_gateway', { critical: false, check: () => ({ state: 'up', connections: connections.size }) });
    // On shutdown each device gets its answer in flight, then a close frame telling it to reconnect.
    drain.register('llm_gateway', async () => {
      await Promise.all(connections.all().map((connection) => connection.closeWhenIdle(CLOSE_GOING_AWAY, 'Server shutting down')));
    });
  }
}
