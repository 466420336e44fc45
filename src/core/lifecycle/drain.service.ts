import { BeforeApplicationShutdown, Inject, Injectable, Logger } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';

/** Waits for one part of the gateway to finish its work in flight. */
export type Drainer = () => Promise<void>;

/**
 * The first step of a graceful shutdown (SIGTERM, SIGINT or `app.close()`): the gateway stops
 * taking new connections (upgrades answer 503, `/health` 503) and gives the work in flight, a
 * voice turn waiting on its model say, up to `SHUTDOWN_DRAIN_TIMEOUT` to finish before sockets
 * are closed. Protocols register a {@link Drainer}; every write they make is already stored, so
 * nothing else needs saving.
 */
@Injectable()
export class DrainService implements BeforeApplicationShutdown {
  private readonly logger = new Logger('Drain');
  private readonly drainers = new Map<string, Drainer>();
  private draining = false;

  constructor(@Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig) {}

  get isDraining(): boolean {
    return this.draining;
  }

  register(name: string, drainer: Drainer): void {
    this.drainers.set(name, drainer);
  }

  async beforeApplicationShutdown(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    const { drainTimeoutMs } = this.config.server;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), drainTimeoutMs)));
    const work = Promise.allSettled([...this.drainers.values()].map((drain) => drain())).then(() => 'drained' as const);
    const outcome = await Promise.race([work, deadline]);
    clearTimeout(timer);
    if (outcome === 'timeout') this.logger.warn(`Work still in flight after ${drainTimeoutMs / 1000} s; closing anyway`);
    else this.logger.log('Work in flight finished');
  }
}
