import 'reflect-metadata';
import { createHook } from 'async_hooks';
import { createRequire } from 'module';
import { join, sep } from 'path';
import { PROJECT_ROOT } from '../support/processes';

/**
 * The gateway the soak runs against: the built app (`dist/`, `AppModule`, as `node dist/main.js`
 * runs it) in a process of its own, started with `--expose-gc`, answering the soak's questions
 * on the IPC channel with what only the process itself can see: its memory after a full
 * garbage collection, its connections, sessions, device tools, calls running, the closes it
 * decided and the timers its code left.
 */

/** The parts of the Nest app and the gateway's services the soak reads; loaded from `dist/` at run time, so declared here by shape. */
interface SoakedApp {
  get<T>(token: unknown, options?: { strict: boolean }): T;
  listen(port: number, host: string): Promise<unknown>;
}

interface Changes {
  subscribe(next: (change: { type: 'added' | 'removed'; connectionId?: string }) => void): unknown;
}

/** A question from the soak, and the answer's shape. */
export type SoakQuestion = ({ type: 'state'; collect: boolean } | { type: 'census'; on: boolean }) & { id: number };

export interface GatewayState {
  type: 'state';
  /** The question's id, echoed. */
  id: number;
  rss: number;
  heapUsed: number;
  external: number;
  connections: number;
  /** Sessions held by open connections. */
  attachedSessions: number;
  /** Sessions in the store: held, or released and resumable until CLOUD_SESSION_TIMEOUT. */
  storedSessions: number;
  /** Device tools registered and not yet removed. */
  clientTools: number;
  callsRunning: number;
  /** Closes the gateway decided, by code. */
  closes: Record<string, number>;
  /** Timers made by the gateway's code while the census was on and still live; `null` when it never ran. */
  liveTimers: number | null;
}

/** Where the gateway's compiled code is: a timer made by a frame in there is the gateway's. */
const GATEWAY_BUILD = join(PROJECT_ROOT, 'dist') + sep;

const load = createRequire(__filename);
const built = <T>(file: string): T => load(join(GATEWAY_BUILD, file)) as T;

/** Live timers made by the gateway's own code (`dist/`), from when the census is turned on. */
class TimerCensus {
  private readonly live = new Set<number>();
  private ran = false;
  private readonly hook = createHook({
    init: (id, type) => {
      if (type !== 'Timeout') return;
      const stack = new Error().stack ?? '';
      if (stack.includes(GATEWAY_BUILD)) this.live.add(id);
    },
    destroy: (id) => void this.live.delete(id),
  });

  turn(on: boolean): void {
    if (on) {
      this.live.clear();
      this.ran = true;
      this.hook.enable();
    } else {
      this.hook.disable();
    }
  }

  get count(): number | null {
    return this.ran ? this.live.size : null;
  }
}

async function main(): Promise<void> {
  const { createGatewayApp } = built<{ createGatewayApp(module: unknown): Promise<SoakedApp> }>('bootstrap.js');
  const { AppModule } = built<{ AppModule: unknown }>('app.module.js');
  const { GatewayConnection } = built<{ GatewayConnection: { prototype: { close(code: number, ...rest: unknown[]): void } } }>('core/ws/connection.js');
  const { ConnectionRegistry } = built<{ ConnectionRegistry: unknown }>('core/ws/connection-registry.js');
  const { SessionService } = built<{ SessionService: unknown }>('assistant/session/session.service.js');
  const { SESSION_STORE } = built<{ SESSION_STORE: unknown }>('assistant/session/session-store.js');
  const { ToolRegistryService } = built<{ ToolRegistryService: unknown }>('core/tools/tool-registry.service.js');

  const closes: Record<string, number> = {};
  const close = GatewayConnection.prototype.close;
  // Counted on the way, every argument passed on (a close may carry how long its socket is held).
  GatewayConnection.prototype.close = function (this: unknown, code: number, ...rest: unknown[]) {
    closes[code] = (closes[code] ?? 0) + 1;
    return close.call(this, code, ...rest);
  };

  const app = await createGatewayApp(AppModule);
  const connections = app.get<{ size: number }>(ConnectionRegistry, { strict: false });
  const sessions = app.get<{ attachedCount: number }>(SessionService, { strict: false });
  const store = app.get<{ size?: number }>(SESSION_STORE, { strict: false });
  const registry = app.get<{ callsRunning: number; changes: Changes }>(ToolRegistryService, { strict: false });
  let clientTools = 0;
  registry.changes.subscribe((change) => {
    if (change.connectionId !== undefined) clientTools += change.type === 'added' ? 1 : -1;
  });
  const census = new TimerCensus();
  const collect = (globalThis as { gc?: () => void }).gc;

  process.on('message', (question: SoakQuestion) => {
    if (question?.type === 'census') {
      census.turn(question.on);
      process.send?.({ type: 'census', id: question.id });
      return;
    }
    if (question?.type !== 'state') return;
    if (question.collect) {
      collect?.();
      collect?.();
    }
    const memory = process.memoryUsage();
    const state: GatewayState = {
      type: 'state',
      id: question.id,
      rss: memory.rss,
      heapUsed: memory.heapUsed,
      external: memory.external,
      connections: connections.size,
      attachedSessions: sessions.attachedCount,
      storedSessions: store.size ?? -1,
      clientTools,
      callsRunning: registry.callsRunning,
      closes,
      liveTimers: census.count,
    };
    process.send?.(state);
  });
  await app.listen(Number(process.env.PORT), '127.0.0.1');
}

main().catch((error: unknown) => {
  process.stderr.write(`soak gateway failed: ${(error as Error)?.stack ?? error}\n`);
  process.exit(1);
});
