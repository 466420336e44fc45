import type Redis from 'ioredis';
import { WebSocket } from 'ws';
import { bearer, connectDevice, deviceRefusal, eventually, GatewayAddress, getJson, onPort, postJson } from '../support/fleet-client';
import { LlmStack, startLlmStack } from '../support/llm-stack';
import { listeningPort, MainProcess, startMain } from '../support/main-process';
import { inspector, removeKeys, TEST_REDIS_URL, uniquePrefix } from '../support/redis';
import { RedisServer } from '../support/redis-server';
import type { TestSocket } from '../support/test-socket';

const OWNER = 'resilience-owner';
const STRANGER = 'resilience-stranger';

/**
 * A device that moves to the next address whenever its socket closes (a replica shutting down),
 * as a firmware reconnects, and keeps every pushed sentence it heard, wherever.
 */
class RoamingDevice {
  readonly heard: string[] = [];
  private socket?: WebSocket;
  private stopped = false;

  constructor(
    private readonly id: string,
    private readonly addresses: GatewayAddress[],
  ) {}

  async connect(index = 0): Promise<void> {
    for (let attempt = 0; attempt < 100 && !this.stopped; attempt++) {
      const at = this.addresses[Math.min(index, this.addresses.length - 1)];
      const opened = await this.open(at).catch(() => false);
      if (opened) return;
      index += 1;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  close(): void {
    this.stopped = true;
    this.socket?.close();
  }

  private open(at: GatewayAddress): Promise<boolean> {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(at.ws('/'), { headers: { ...bearer(OWNER), 'Device-Id': this.id } });
      socket.on('message', (data) => {
        const frame = JSON.parse(data.toString());
        if (frame.type === 'llm_response' && frame.origin === 'push') this.heard.push(frame.content);
      });
      socket.once('open', () => {
        this.socket = socket;
        socket.once('close', () => void (this.stopped || this.connect(this.addresses.indexOf(at) + 1)));
        resolve(true);
      });
      socket.once('unexpected-response', () => reject(new Error('refused')));
      socket.once('error', reject);
    });
  }
}

/** Every value of `values` once, whatever the order. */
const once = (values: string[]) => [...new Set(values)].length === values.length;

describe('the fleet across replicas when replicas restart and Redis loses its data (hardening III)', () => {
  describe('a rolling restart: replica A shuts down (SIGTERM) with pushes in flight and 16 pushes held', () => {
    const prefix = uniquePrefix();
    const shared = { REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: prefix, AUTH_TOKENS: `${OWNER},${STRANGER}`, FLEET_HOLD_MAX_COUNT: 16 };
    let redis: Redis;
    let b: LlmStack;
    let a: MainProcess;
    let aAt: GatewayAddress;

    beforeAll(async () => {
      redis = await inspector();
      b = await startLlmStack(shared);
      a = startMain({
        ...Object.fromEntries(Object.entries(shared).map(([key, value]) => [key, String(value)])),
        LLM_BASE_URL: b.llm.baseUrl,
        SHUTDOWN_DRAIN_TIMEOUT: '2',
      });
      aAt = onPort(await listeningPort(a.output));
    });

    afterAll(async () => {
      if (a.child.exitCode === null && a.child.signalCode === null) a.child.kill('SIGKILL');
      await a.exited;
      await b.close();
      await removeKeys(redis, prefix);
      redis.disconnect();
    });

    it('loses no push and speaks none twice; "spoken" only for what the device heard', async () => {
      const seen = async (id: string, online: boolean) =>
        eventually(async () => (await getJson(b.gateway, `/devices/${id}`, OWNER)).status === (online ? 200 : 404), 10_000, `${id} on B`);
      // A device of A's that is away, 16 pushes held for it.
      await (await connectDevice(aAt, 'roam-held', OWNER)).close();
      await seen('roam-held', false);
      const held = Array.from({ length: 16 }, (_, index) => `held ${index}`);
      for (const text of held)
        expect(await postJson(b.gateway, '/devices/roam-held/say', OWNER, { text, hold_s: 120 })).toMatchObject({ body: { delivered: 'held' } });
      // A device on A hearing pushes sent through B, before, during and after A's shutdown.
      const live = new RoamingDevice('roam-live', [aAt, b.gateway]);
      const away = new RoamingDevice('roam-held', [aAt, b.gateway]);
      await live.connect();
      await seen('roam-live', true);
      const receipts: { text: string; delivered?: string; error?: unknown }[] = [];
      let stopping: Promise<unknown> | undefined;
      for (let index = 0; index < 60; index++) {
        const text = `live ${index}`;
        const answer = await postJson(b.gateway, '/devices/roam-live/say', OWNER, { text, hold_s: 120 });
        receipts.push({ text, delivered: answer.body.delivered, error: answer.body.error });
        if (index === 10) {
          await away.connect();
          a.child.kill('SIGTERM');
          stopping = a.exited;
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await stopping;
      try {
        expect(receipts.filter((receipt) => receipt.error)).toEqual([]);
        const sent = receipts.map((receipt) => receipt.text);
        await eventually(() => sent.every((text) => live.heard.includes(text)) && held.every((text) => away.heard.includes(text)), 15_000, 'every push heard');
        await new Promise((resolve) => setTimeout(resolve, 500));
        expect(once(live.heard)).toBe(true);
        expect(away.heard).toEqual(held);
      } finally {
        live.close();
        away.close();
      }
    }, 60_000);
  });

  describe('two replicas on a Redis that restarts empty', () => {
    let server: RedisServer;
    let a: LlmStack;
    let b: LlmStack;
    const devices: TestSocket[] = [];

    beforeAll(async () => {
      server = await RedisServer.start();
      const settings = { REDIS_URL: server.url, REDIS_KEY_PREFIX: 'vtg-heal:', AUTH_TOKENS: `${OWNER},${STRANGER}` };
      a = await startLlmStack(settings);
      b = await startLlmStack(settings);
    });

    afterAll(async () => {
      await Promise.all(devices.map((device) => device.close()));
      await a.close();
      await b.close();
      await server.stop();
    });

    it('gives one owner to two principals connecting one fresh id on two replicas at once', async () => {
      for (let trial = 0; trial < 20; trial++) {
        const id = `race-${trial}`;
        const first = trial % 2 === 0 ? OWNER : STRANGER;
        const second = first === OWNER ? STRANGER : OWNER;
        const outcomes = await Promise.all([deviceRefusal(a.gateway, id, first), deviceRefusal(b.gateway, id, second)]);
        expect(outcomes.sort()).toEqual([409, undefined]);
      }
    });

    it('re-registers the devices each replica holds, with their owners, and is ready only once it has', async () => {
      devices.push(await connectDevice(a.gateway, 'heal-a1', OWNER), await connectDevice(b.gateway, 'heal-b1', OWNER));
      const listed = async (at: LlmStack) => ((await getJson(at.gateway, '/devices', OWNER)).body.devices ?? []).map((device: any) => device.id).sort();
      await eventually(async () => (await listed(a)).length === 2 && (await listed(b)).length === 2, 5000, 'both devices on both replicas');

      await server.restartEmpty();
      const ready = async (at: LlmStack) => (await fetch(at.gateway.http('/health/ready'))).status === 200;
      await eventually(async () => (await ready(a)) && (await ready(b)), 15_000, 'both replicas ready again');
      // Ready means registered: everything works at once, on both replicas.
      expect(await listed(a)).toEqual(['heal-a1', 'heal-b1']);
      expect(await listed(b)).toEqual(['heal-a1', 'heal-b1']);
      const body = (await (await fetch(a.gateway.http('/health/ready'))).json()) as any;
      expect(body.info.fleet).toMatchObject({ status: 'up', local: 1 });
      expect(await postJson(a.gateway, '/devices/heal-b1/say', OWNER, { text: 'Across, after the loss.' })).toMatchObject({ body: { delivered: 'spoken' } });
      expect(await devices[1].next(5000)).toMatchObject({ content: 'Across, after the loss.' });
      expect(await deviceRefusal(b.gateway, 'heal-a1', STRANGER)).toBe(409);
      expect(await deviceRefusal(a.gateway, 'heal-b1', STRANGER)).toBe(409);
    }, 30_000);
  });
});
