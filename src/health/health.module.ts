import { Inject, Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { SESSION_STORE, SessionStore } from '../assistant/session/session-store';
import { ToolRegistryService } from '../core/tools/tool-registry.service';
import { HealthController } from './health.controller';
import { HealthService } from './health.service';
import { ModelServerProbe } from './model-server.probe';
import { ReadinessIndicators } from './readiness.indicators';

@Module({
  // Readiness failures are answered to the prober; the model probe logs its own changes of state.
  imports: [TerminusModule.forRoot({ logger: false })],
  controllers: [HealthController],
  providers: [HealthService, ModelServerProbe, ReadinessIndicators],
  exports: [HealthService],
})
export class HealthModule {
  constructor(health: HealthService, registry: ToolRegistryService, @Inject(SESSION_STORE) sessions: SessionStore) {
    health.register('tools', { critical: false, check: () => ({ state: 'up', count: registry.list().length }) });
    // Without its session store an instance cannot serve a conversation: not ready.
    health.register('sessions', {
      critical: true,
      check: () => ({ state: sessions.ready ? 'up' : 'down', store: sessions.constructor.name }),
    });
  }
}
