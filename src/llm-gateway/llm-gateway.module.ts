import { Module, OnModuleInit } from '@nestjs/common';
import { AssistantModule } from '../assistant/assistant.module';
import { HealthIndicatorService } from '@nestjs/terminus';
import { DrainService } from '../core/lifecycle/drain.service';
import { ProtocolRegistry } from '../core/protocols/protocol-registry';
import { ConnectionRegistry } from '../core/ws/connection-registry';
import { CLOSE_GOING_AWAY } from '../core/ws/gateway-ws.adapter';
import { HealthModule } from '../health/health.module';
import { HealthChecks } from '../health/health-checks';
import { FleetModule } from '../fleet/fleet.module';
import { ClientToolsService } from './client-tools.service';
import { DeviceLinks } from './device-link';
import { LLM_PROTOCOL, LlmGateway } from './llm-gateway.gateway';
import { LLM_GATEWAY_DECLARATION } from './llm-gateway.protocol';
import { SessionBindingService } from './session-binding.service';
import { SpeechCleaningInterceptor } from './speech-cleaning.interceptor';
import { TurnEnvironment } from './turn-environment';
import { TurnStarter } from './turn-starter';

/** The voice assistant's WebSocket API (LLM gateway spec) at `/` and `/llm`. */
@Module({
  imports: [HealthModule, FleetModule, AssistantModule],
  providers: [LlmGateway, SessionBindingService, TurnEnvironment, TurnStarter, ClientToolsService, DeviceLinks, SpeechCleaningInterceptor],
  // The turn engine, sessions and device tools, for protocols that hold turns of their own (xiaozhi devices).
  exports: [SessionBindingService, TurnStarter, ClientToolsService, DeviceLinks],
})
export class LlmGatewayModule implements OnModuleInit {
  constructor(
    checks: HealthChecks,
    indicators: HealthIndicatorService,
    drain: DrainService,
    connections: ConnectionRegistry,
    private readonly protocols: ProtocolRegistry,
  ) {
    checks.add('llm_gateway', () => indicators.check('llm_gateway').up({ connections: connections.count(LLM_PROTOCOL) }));
    // On shutdown each device gets its answer in flight, then a close frame telling it to reconnect.
    drain.register('llm_gateway', async () => {
      await Promise.all(connections.list(LLM_PROTOCOL).map((connection) => connection.closeWhenIdle(CLOSE_GOING_AWAY, 'Server shutting down')));
    });
  }

  onModuleInit(): void {
    this.protocols.declare(LLM_GATEWAY_DECLARATION);
  }
}
