import { join } from 'path';
import { BENCH_BUILD, freePort, ServerProcess, startServer } from '../support/processes';
import { BENCH_TOKEN, gatewayServer } from '../support/servers';
import type { GatewayState } from './soak-gateway';

/** The bearer header every soak client sends: auth stays on, as in production. */
export const AUTH = { Authorization: `Bearer ${BENCH_TOKEN}` };

/** A soak gateway process (soak-gateway.ts) and the questions the soak asks it. */
export interface SoakGateway {
  readonly server: ServerProcess;
  ws(path: string): string;
  /** Its state; with `collect`, memory is read after full garbage collections. */
  state(collect?: boolean): Promise<GatewayState>;
  /** Starts or stops counting the timers its code makes. */
  census(on: boolean): Promise<void>;
  /** Resolves once `condition` holds of its state (read without collecting); rejects after `timeoutMs`. */
  until(condition: (state: GatewayState) => boolean, what: string, timeoutMs?: number): Promise<GatewayState>;
  stop(): Promise<void>;
}

/**
 * Starts the gateway for a soak phase: the bench's settings (loopback, auth on, caps raised for
 * one address and one token), the scripted model at `llmBaseUrl`, then `settings`.
 */
export async function startSoakGateway(llmBaseUrl: string, settings: Record<string, string> = {}): Promise<SoakGateway> {
  const port = await freePort();
  const { env } = gatewayServer(port, {
    LLM_BASE_URL: llmBaseUrl,
    LLM_MAX_RETRIES: '0',
    LLM_TIMEOUT: '30',
    CLIENT_TOOL_TIMEOUT: '60',
    ...settings,
  });
  const server = await startServer({ name: 'gateway (soak)', args: [join(BENCH_BUILD, 'soak', 'soak-gateway.js')], env }, port);
  const state = (collect = false) => server.ask<GatewayState>({ type: 'state', collect } as { type: string });
  return {
    server,
    ws: (path) => `ws://127.0.0.1:${port}${path}`,
    state,
    census: async (on) => void (await server.ask({ type: 'census', on } as { type: string })),
    async until(condition, what, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const now = await state();
        if (condition(now)) return now;
        if (Date.now() > deadline) throw new Error(`The soak gateway did not settle within ${timeoutMs} ms: ${what} (${JSON.stringify(now)})`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    stop: () => server.stop(),
  };
}

/** `promise`, or a rejection naming `what` once `ms` have passed. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
    }),
  ]);
}

export const MB = 1024 * 1024;
