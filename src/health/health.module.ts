import { Module } from '@nestjs/common';
import { AssistantModule } from '../assistant/assistant.module';
import { GatewayState } from '../core/state/gateway-state';
import { TerminusModule } from '@nestjs/terminus';
import { GatewayHealthIndicators } from './gateway-health.indicators';
import { HealthChecks } from './health-checks';
import { HealthController } from './health.controller';
import { ModelServerProbe } from './model-server.probe';

/**
 * `/health`, `/health/live` and `/health/ready`, with `@nestjs/terminus`. Exports {@link HealthChecks}
 * and terminus (its `HealthIndicatorService`), so that a module adds its checks the terminus way.
 */
@Module({
  // Failed checks are answered to the prober; the model probe logs its own changes of state.
  imports: [TerminusModule.forRoot({ logger: false }), AssistantModule],
  controllers: [HealthController],
  providers: [HealthChecks, GatewayHealthIndicators, ModelServerProbe],
  exports: [HealthChecks, TerminusModule],
})
export class HealthModule {
  constructor(checks: HealthChecks, indicators: GatewayHealthIndicators, state: GatewayState) {
    checks.add('accepting', () => indicators.accepting(), ['health', 'ready']);
    checks.add('process', () => indicators.process());
    checks.add('tools', () => indicators.tools());
    checks.add('sessions', () => indicators.sessions());
    checks.add('model', () => indicators.model(), ['ready']);
    if (state.shared) checks.add('redis', () => indicators.redis(), ['ready']);
  }
}
