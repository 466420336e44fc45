import { Module } from '@nestjs/common';
import { ToolRegistryService } from '../core/tools/tool-registry.service';
import { HealthController } from './health.controller';
import { HealthService } from './health.service';

@Module({
  controllers: [HealthController],
  providers: [HealthService],
  exports: [HealthService],
})
export class HealthModule {
  constructor(health: HealthService, registry: ToolRegistryService) {
    health.register('tools', { critical: false, check: () => ({ state: 'up', count: registry.list().length }) });
  }
}
