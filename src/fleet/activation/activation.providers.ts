import type { Provider } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';
import { MemoryRateLimiter } from '../../core/limits/memory-rate-limiter';
import type { RateLimiter } from '../../core/limits/rate-limiter';
import { RedisRateLimiter } from '../../core/limits/redis-rate-limiter';
import { GatewayState } from '../../core/state/gateway-state';
import { ACTIVATION_LIMITER, ACTIVATION_STORE, ActivationStore, MemoryActivationStore, RedisActivationStore } from './activation-store';
import { ActivationService } from './activation.service';
import { ActivationTools } from './activation.tools';
import { DeviceCredentialSessions } from './device-credential-sessions';

/**
 * Activation's parts, for the fleet module: its store and limiter (in Redis when instances share
 * it), the service, the sessions its revocations close, and the `activate_device` tool, which
 * exists only while activation is on (with it off, agents' catalogues do not change).
 */
export const ACTIVATION_PROVIDERS: Provider[] = [
  {
    provide: ACTIVATION_STORE,
    inject: [GatewayState, GATEWAY_CONFIG],
    useFactory: (state: GatewayState, config: GatewayConfig) =>
      config.xiaozhi.activation === undefined
        ? new MemoryActivationStore()
        : state.choose<ActivationStore | Promise<ActivationStore>>({
            memory: () => new MemoryActivationStore(),
            redis: (redis) => RedisActivationStore.connect(redis),
          }),
  },
  {
    provide: ACTIVATION_LIMITER,
    inject: [GatewayState, GATEWAY_CONFIG],
    useFactory: (state: GatewayState, config: GatewayConfig) =>
      config.xiaozhi.activation === undefined
        ? new MemoryRateLimiter()
        : state.choose<RateLimiter | Promise<RateLimiter>>({ memory: () => new MemoryRateLimiter(), redis: (redis) => RedisRateLimiter.connect(redis) }),
  },
  ActivationService,
  DeviceCredentialSessions,
  {
    provide: ActivationTools,
    inject: [GATEWAY_CONFIG, ActivationService],
    useFactory: (config: GatewayConfig, activation: ActivationService) => (config.xiaozhi.activation === undefined ? {} : new ActivationTools(activation)),
  },
];
