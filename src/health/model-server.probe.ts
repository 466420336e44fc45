import { Inject, Injectable, Logger } from '@nestjs/common';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';

/** How long one probe's answer stands: readiness is polled every few seconds, by every balancer. */
export const MODEL_PROBE_CACHE_MS = 2_000;
/** How long the model server gets to answer the probe. */
export const MODEL_PROBE_TIMEOUT_MS = 2_000;

export interface ModelProbeResult {
  up: boolean;
  /** The HTTP status, when the server answered. */
  status?: number;
  /** Why it is down. */
  problem?: string;
  /** How long the probe took. */
  latencyMs: number;
  checkedAt: number;
}

/**
 * Whether the model server answers, by the cheapest request every OpenAI-compatible server
 * serves: `GET {LLM_BASE_URL}models`, with the API key when there is one. The answer is kept for
 * {@link MODEL_PROBE_CACHE_MS} and probes in flight are shared, so however often readiness is
 * asked, the model server sees at most one probe per period.
 *
 * Down: no answer within {@link MODEL_PROBE_TIMEOUT_MS}, a 5xx, or 401/403 (the key is refused,
 * so no turn would succeed). Any other answer (a 404 from a server without `/models`) shows
 * that the server is there.
 */
@Injectable()
export class ModelServerProbe {
  private readonly logger = new Logger('Health');
  private readonly url: string;
  private last?: ModelProbeResult;
  private inFlight?: Promise<ModelProbeResult>;

  constructor(@Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig) {
    this.url = new URL('models', config.llm.baseUrl).href;
  }

  get target(): string {
    return this.url;
  }

  check(): Promise<ModelProbeResult> {
    if (this.last && Date.now() - this.last.checkedAt < MODEL_PROBE_CACHE_MS) return Promise.resolve(this.last);
    this.inFlight ??= this.probe().finally(() => (this.inFlight = undefined));
    return this.inFlight;
  }

  private async probe(): Promise<ModelProbeResult> {
    const started = performance.now();
    const { apiKey } = this.config.llm;
    let result: Omit<ModelProbeResult, 'latencyMs' | 'checkedAt'>;
    try {
      const response = await fetch(this.url, {
        headers: apiKey ? { Authorization: `Bearer ${apiKey}` } : {},
        signal: AbortSignal.timeout(MODEL_PROBE_TIMEOUT_MS),
      });
      await response.body?.cancel().catch(() => undefined);
      const { status } = response;
      const refused = status >= 500 || status === 401 || status === 403;
      result = refused ? { up: false, status, problem: `The model server answered HTTP ${status}` } : { up: true, status };
    } catch (error) {
      const timedOut = (error as Error)?.name === 'TimeoutError';
      result = { up: false, problem: timedOut ? `No answer within ${MODEL_PROBE_TIMEOUT_MS / 1000} s` : 'The model server could not be reached' };
    }
    const checked: ModelProbeResult = { ...result, latencyMs: Math.round(performance.now() - started), checkedAt: Date.now() };
    if (this.last?.up !== checked.up) {
      if (checked.up) this.logger.log(`Model server at ${this.url} is up`);
      else this.logger.warn(`Model server at ${this.url} is down: ${checked.problem}`);
    }
    this.last = checked;
    return checked;
  }
}
