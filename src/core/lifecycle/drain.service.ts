import { BeforeApplicationShutdown, Inject, Injectable, Logger } from '@nestjs/common';
import { setImmediate as afterPendingCallbacks } from 'timers/promises';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';
import { ToolRegistryService } from '../tools/tool-registry.service';

/** Waits for one part of the gateway to finish work in flight that is not a tool call. */
export type Drainer = () => Promise<void>;

/** What a protocol does once the drain is over and before the sockets close: says goodbye, closes its sessions. */
export type AfterDrain = () => Promise<void>;

/**
 * The first step of a graceful shutdown (SIGTERM, SIGINT or `app.close()`), decided here once for
 * every protocol. The gateway stops taking new connections (upgrades answer 503, `/health` 503)
 * and gives the work in flight up to `SHUTDOWN_DRAIN_TIMEOUT`:
 * - every tool call that has not answered yet, whatever protocol it came by (the calls
 *   `ToolRegistryService` counts), ends and its answer is written;
 * - work that is not a tool call ends: each module with some registers a {@link Drainer} (the
 *   LLM gateway's turns).
 *
 * Calls still running at the deadline end with `TOOL_UNAVAILABLE`, which each protocol answers in
 * its own words. Only then do the protocols' {@link afterDrain} steps run, and after them the
 * WebSocket adapter closes every socket with 1001 and Nest closes the HTTP server. Every write is
 * already stored, so nothing else needs saving.
 *
 * A protocol cannot close its sessions in a shutdown hook of its own: Nest runs those one module
 * at a time, the protocols' modules before the core's, so they would close before the drain.
 */
@Injectable()
export class DrainService implements BeforeApplicationShutdown {
  private readonly logger = new Logger('Drain');
  private readonly drainers = new Map<string, Drainer>();
  private readonly afterDrainSteps = new Map<string, AfterDrain>();
  private draining = false;

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    private readonly tools: ToolRegistryService,
  ) {}

  /** Whether shutdown has begun: upgrades are refused from here on. */
  get isDraining(): boolean {
    return this.draining;
  }

  /** Work the drain waits for besides tool calls, which it waits for itself. */
  register(name: string, drainer: Drainer): void {
    this.drainers.set(name, drainer);
  }

  /** A step run once the drain is over, before the sockets close. */
  afterDrain(name: string, step: AfterDrain): void {
    this.afterDrainSteps.set(name, step);
  }

  async beforeApplicationShutdown(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    const { drainTimeoutMs } = this.config.server;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), drainTimeoutMs)));
    const work = Promise.allSettled([this.toolCallsAnswered(), ...[...this.drainers.values()].map((drain) => drain())]).then(() => 'drained' as const);
    const outcome = await Promise.race([work, deadline]);
    clearTimeout(timer);
    if (outcome === 'timeout') {
      const seconds = drainTimeoutMs / 1000;
      const abandoned = this.tools.abandonCallsRunning(
        `The gateway is shutting down and the call did not finish within ${seconds} s (SHUTDOWN_DRAIN_TIMEOUT); call again`,
      );
      await afterPendingCallbacks();
      this.logger.warn(`Work still in flight after ${seconds} s (${abandoned} tool calls answered with an error); closing anyway`);
    } else {
      this.logger.log('Work in flight finished');
    }
    await Promise.allSettled([...this.afterDrainSteps.values()].map((step) => step()));
  }

  /**
   * Resolves once no tool call has run for a turn of the event loop: the answers the last ones
   * made on their way out are written by then (every protocol answers from the outcome's promise),
   * and a call started meanwhile (the next of a `/utcp/<tool>` queue) is waited for too.
   */
  private async toolCallsAnswered(): Promise<void> {
    do {
      await this.tools.whenNoCallsRunning();
      await afterPendingCallbacks();
    } while (this.tools.callsRunning > 0);
  }
}
