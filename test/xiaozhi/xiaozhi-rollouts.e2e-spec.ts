/** @jest-environment ./test/support/native-typed-arrays.environment.js */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { mkdtempSync, rmSync, writeFileSync } from 'fs';
import type Redis from 'ioredis';
import { tmpdir } from 'os';
import { join } from 'path';
import { ReplicaMessaging } from '../../src/fleet/replicas/replica-messaging';
import { bearer, eventually, GatewayAddress, getJson, postJson } from '../support/fleet-client';
import { inspector, removeKeys, TEST_REDIS_URL, uniquePrefix } from '../support/redis';
import { MqttXiaozhiDevice } from '../support/xiaozhi/mqtt-device';
import { XiaozhiDevice, XiaozhiDeviceOptions } from '../support/xiaozhi/xiaozhi-device';
import { AGENT_TOKEN, bootDevice, DEVICE_TOKEN, startXiaozhiStack, XiaozhiStack } from '../support/xiaozhi/xiaozhi-stack';

const STRANGER_TOKEN = 'xiaozhi-rollouts-stranger';
/**
 * The devices connect with their owner's token (so they are `owner`'s, and a share of `owner`'s
 * devices holds them); `ops` is granted the lab's boards by glob and may name them by id or glob;
 * a stranger reaches none of them.
 */
const TOKENS = `
tokens:
  - name: owner
    token: ${DEVICE_TOKEN}
  - name: ops
    token: ${AGENT_TOKEN}
    devices: ["aa:bb:cc:*"]
  - name: stranger
    token: ${STRANGER_TOKEN}
`;
const FALLBACK = { version: '1.0.0', url: 'https://fw.example.com/fallback-1.0.0.bin' };
const BREAD_BUILD = { version: '2.5.0', url: 'https://fw.example.com/bread-2.5.0.bin', boards: ['bread-*'] };

/**
 * Firmware rollouts and endpoint moves, end to end: two gateways (A and B) on one Redis, the
 * simulated xiaozhi firmware asking A for its configuration as it does at each boot, and the
 * rollouts managed over HTTP and MCP on either.
 */
describe('xiaozhi firmware rollouts across two replicas', () => {
  const prefix = uniquePrefix();
  const tokensDir = mkdtempSync(join(tmpdir(), 'vtg-rollouts-'));
  const tokensFile = join(tokensDir, 'tokens.yaml');
  writeFileSync(tokensFile, TOKENS, { mode: 0o600 });
  const shared = {
    REDIS_URL: TEST_REDIS_URL,
    REDIS_KEY_PREFIX: prefix,
    AUTH_TOKENS: '',
    AUTH_TOKENS_FILE: tokensFile,
    XIAOZHI_DEVICE_TOKEN: DEVICE_TOKEN,
    XIAOZHI_FIRMWARE_VERSION: FALLBACK.version,
    XIAOZHI_FIRMWARE_URL: FALLBACK.url,
  };
  let redis: Redis;
  let a: XiaozhiStack;
  let b: XiaozhiStack;
  const devices: XiaozhiDevice[] = [];
  let serial = 0;

  /** A device booted against A (configuration asked, session opened), so that its id is its owner's. */
  const bootOnA = async (options: XiaozhiDeviceOptions = {}): Promise<XiaozhiDevice> => {
    const device = await bootDevice(a.gateway.http('/xiaozhi/ota/'), { deviceId: `aa:bb:cc:00:00:${(++serial).toString(16).padStart(2, '0')}`, ...options });
    devices.push(device);
    return device;
  };
  /** The `firmware` block of the device's next configuration answer from A. */
  const firmwareOffered = async (device: XiaozhiDevice): Promise<unknown> => {
    const answer = await device.requestConfiguration(a.gateway.http('/xiaozhi/ota/'));
    expect(answer.status).toBe(200);
    return answer.body.firmware;
  };
  const post = (at: GatewayAddress, path: string, body: unknown, token = DEVICE_TOKEN) => postJson(at, path, token, body);
  const get = (at: GatewayAddress, path: string, token = DEVICE_TOKEN) => getJson(at, path, token);

  beforeAll(async () => {
    redis = await inspector();
    a = await startXiaozhiStack(shared);
    b = await startXiaozhiStack(shared);
    const firmware = await post(b.gateway, '/fleet/firmware', { id: 'bread-2.5.0', ...BREAD_BUILD, notes: 'audio fix' });
    expect(firmware.status).toBe(201);
  }, 30_000);

  afterEach(async () => {
    await Promise.all(devices.splice(0).map((device) => device.close()));
    // Each test's rollouts end with it: stopped, then removed.
    for (const token of [DEVICE_TOKEN, AGENT_TOKEN, STRANGER_TOKEN]) {
      const { body } = await get(b.gateway, '/fleet/rollouts', token);
      for (const rollout of body.rollouts) {
        await post(b.gateway, `/fleet/rollouts/${rollout.id}/stop`, {}, token);
        await fetch(b.gateway.http(`/fleet/rollouts/${rollout.id}`), { method: 'DELETE', headers: bearer(token) });
      }
    }
  });

  afterAll(async () => {
    await a?.close();
    await b?.close();
    if (redis) {
      await removeKeys(redis, prefix);
      redis.disconnect();
    }
    rmSync(tokensDir, { recursive: true, force: true });
  });

  it("offers the group's firmware to the devices of a 100 % group on their board, the fallback to others, and nothing to one that runs it", async () => {
    const inGroup = await bootOnA({ board: 'bread-compact-wifi', firmwareVersion: '2.4.2' });
    const otherBoard = await bootOnA({ board: 'esp-box-3', firmwareVersion: '2.4.2' });
    const upToDate = await bootOnA({ board: 'bread-compact-wifi', firmwareVersion: '2.5.0' });
    const created = await post(b.gateway, '/fleet/rollouts', { id: 'everyone', firmware_id: 'bread-2.5.0', percent: 100 });
    expect(created).toMatchObject({ status: 201, body: { id: 'everyone', group: { percent: 100 }, state: 'active', owner: 'name:owner', revision: 1 } });

    // Made on B, read by A (within the second A keeps what it read).
    await eventually(
      async () => JSON.stringify(await firmwareOffered(inGroup)) === JSON.stringify({ version: '2.5.0', url: BREAD_BUILD.url }),
      5000,
      'the rollout reaching A',
    );
    expect(await firmwareOffered(otherBoard)).toEqual(FALLBACK);
    expect(await firmwareOffered(upToDate)).toBeUndefined();
    // A device no one owns yet (it never connected) is in no share: the fallback.
    const newcomer = new XiaozhiDevice({ deviceId: 'aa:bb:cc:00:ff:01' });
    devices.push(newcomer);
    expect(await firmwareOffered(newcomer)).toEqual(FALLBACK);

    // Both replicas list the same rollout; the directory shows what each device runs and is offered.
    expect((await get(a.gateway, '/fleet/rollouts')).body.rollouts.map((rollout: any) => rollout.id)).toEqual(['everyone']);
    const { body: view } = await get(b.gateway, `/devices/${inGroup.identity.deviceId}`);
    expect(view).toMatchObject({
      board: 'bread-compact-wifi',
      firmware_version: '2.4.2',
      rollout: { firmware: { rollout: 'everyone', firmware_id: 'bread-2.5.0', version: '2.5.0', offered: true } },
    });
    const listed = (await get(a.gateway, '/devices')).body.devices.find((device: any) => device.id === upToDate.identity.deviceId);
    expect(listed).toMatchObject({ firmware_version: '2.5.0', rollout: { firmware: { offered: false } } });
  });

  it('widens a share step by step, never narrows it, and offers nothing once paused or stopped', async () => {
    const device = await bootOnA({ firmwareVersion: '2.4.2' });
    expect((await post(b.gateway, '/fleet/rollouts', { id: 'canary', firmware_id: 'bread-2.5.0', percent: 0 })).status).toBe(201);
    // A reads the rollouts again within a second of any change (the last test's were removed on B).
    await eventually(async () => JSON.stringify(await firmwareOffered(device)) === JSON.stringify(FALLBACK), 5000, 'the fallback at 0 %');
    expect((await post(a.gateway, '/fleet/rollouts/canary/widen', { percent: 100 })).body).toMatchObject({ group: { percent: 100 }, revision: 2 });
    await eventually(async () => ((await firmwareOffered(device)) as any)?.version === '2.5.0', 5000, 'the widened rollout');

    const narrowed = await post(b.gateway, '/fleet/rollouts/canary/widen', { percent: 50 });
    expect(narrowed).toMatchObject({ status: 400, body: { error: { code: 'INVALID_MESSAGE', message: expect.stringMatching(/only widens/) } } });

    expect((await post(b.gateway, '/fleet/rollouts/canary/pause', {})).body.state).toBe('paused');
    await eventually(async () => ((await firmwareOffered(device)) as any)?.version === FALLBACK.version, 5000, 'the paused rollout offering nothing');
    expect((await post(b.gateway, '/fleet/rollouts/canary/resume', {})).body.state).toBe('active');
    expect((await post(b.gateway, '/fleet/rollouts/canary/stop', {})).body.state).toBe('stopped');
    await eventually(async () => ((await firmwareOffered(device)) as any)?.version === FALLBACK.version, 5000, 'the stopped rollout offering nothing');
    expect((await post(b.gateway, '/fleet/rollouts/canary/resume', {})).body.error.message).toMatch(/stopped for good/);
    expect((await post(b.gateway, '/fleet/rollouts/canary/widen', { percent: 100 })).body.error.message).toMatch(/is stopped/);
  });

  it("moves a device to B's WebSocket without reflashing: the answer from A says B, and the firmware connects there", async () => {
    const device = await bootOnA();
    const id = device.identity.deviceId;
    const bInstance = b.gateway.app.get(ReplicaMessaging).instanceId;
    await eventually(async () => (await get(b.gateway, `/devices/${id}`, AGENT_TOKEN)).status === 200, 5000, 'the device listed');
    expect((await get(b.gateway, `/devices/${id}`, AGENT_TOKEN)).body.instance).not.toBe(bInstance);

    // `ops` reaches the lab's boards by its grant, so it may move one by id.
    const move = await post(
      a.gateway,
      '/fleet/rollouts',
      { id: 'to-b', endpoint: { websocket_url: b.gateway.ws('/xiaozhi/v1/') }, devices: [id] },
      AGENT_TOKEN,
    );
    expect(move.status).toBe(201);
    device.disconnect();
    const answer = await device.requestConfiguration(a.gateway.http('/xiaozhi/ota/'));
    expect(answer.body.websocket).toEqual({ url: b.gateway.ws('/xiaozhi/v1/'), token: DEVICE_TOKEN });
    await device.connect();
    await eventually(async () => (await get(a.gateway, `/devices/${id}`, AGENT_TOKEN)).body.instance === bInstance, 5000, 'the device on B');
    expect((await get(a.gateway, `/devices/${id}`, AGENT_TOKEN)).body.rollout).toEqual({
      endpoint: { rollout: 'to-b', websocket_url: b.gateway.ws('/xiaozhi/v1/') },
    });
  });

  it("keeps principals apart: a stranger neither sees another's rollouts nor reaches their devices with its own", async () => {
    const device = await bootOnA({ firmwareVersion: '2.4.2' });
    expect((await post(b.gateway, '/fleet/rollouts', { id: 'mine', firmware_id: 'bread-2.5.0', devices: [device.identity.deviceId] })).status).toBe(201);
    expect((await get(a.gateway, '/fleet/rollouts/mine', STRANGER_TOKEN)).status).toBe(404);
    expect((await post(a.gateway, '/fleet/rollouts/mine/stop', {}, STRANGER_TOKEN)).body.error.code).toBe('NOT_FOUND');
    expect((await get(a.gateway, '/fleet/firmware', STRANGER_TOKEN)).body.firmware).toEqual([]);
    // The stranger's rollout may name the id, but the firmware is the stranger's own and the device is not theirs.
    const theirs = await post(
      a.gateway,
      '/fleet/firmware',
      { id: 'evil', version: '9.9.9', url: 'https://evil.example.com/x.bin', boards: ['*'] },
      STRANGER_TOKEN,
    );
    expect(theirs.status).toBe(201);
    expect(
      (await post(a.gateway, '/fleet/rollouts', { id: 'hijack', firmware_id: 'evil', devices: [device.identity.deviceId], force: true }, STRANGER_TOKEN))
        .status,
    ).toBe(201);
    expect((await post(a.gateway, '/fleet/rollouts', { firmware_id: 'bread-2.5.0', percent: 100 }, STRANGER_TOKEN)).body.error.message).toMatch(
      /No firmware entry "bread-2.5.0" of yours/,
    );
    await eventually(async () => ((await firmwareOffered(device)) as any)?.version === '2.5.0', 5000, "the owner's rollout");
    // In use, an entry cannot be removed; once its rollout is gone it can.
    const inUse = await fetch(a.gateway.http('/fleet/firmware/evil'), { method: 'DELETE', headers: bearer(STRANGER_TOKEN) });
    expect(inUse.status).toBe(400);
    expect(((await inUse.json()) as any).error.message).toMatch(/offered by rollout "hijack"/);
  });

  it('refuses bad input with the reason, over HTTP and as tools', async () => {
    const refusals: [string, unknown, RegExp][] = [
      ['/fleet/firmware', { version: 'v2', url: BREAD_BUILD.url, boards: ['*'] }, /version: A firmware version is 1 to 8 numbers/],
      ['/fleet/firmware', { version: '2.0.0', url: 'javascript:alert(1)', boards: ['*'] }, /url must be a http or https URL/],
      ['/fleet/firmware', { ...BREAD_BUILD, id: 'bread-2.5.0' }, /The id "bread-2.5.0" is taken/],
      ['/fleet/rollouts', { firmware_id: 'bread-2.5.0', percent: 150 }, /percent must be a number from 0 to 100/],
      ['/fleet/rollouts', { firmware_id: 'bread-2.5.0', globs: Array.from({ length: 5000 }, (_, i) => `k${i}-*`) }, /globs must be a list of 1 to 16 items/],
      ['/fleet/rollouts', { firmware_id: 'bread-2.5.0', globs: ['a*'.repeat(100)] }, /is not a device glob/],
      ['/fleet/rollouts', { endpoint: { websocket_url: 'http://b.example.com/' }, devices: ['aa:bb:cc:00:00:01'] }, /websocket_url must be a ws or wss URL/],
      ['/fleet/rollouts', { firmware_id: 'nope', percent: 10 }, /No firmware entry "nope" of yours/],
      ['/fleet/rollouts/nope/widen', { percent: 'lots' }, /percent must be a number/],
    ];
    for (const [path, body, message] of refusals) {
      const { status, body: answer } = await post(b.gateway, path, body);
      expect({ path, status, message: answer.error?.message }).toEqual({
        path,
        status: answer.error?.code === 'NOT_FOUND' ? 404 : 400,
        message: expect.stringMatching(message),
      });
    }
    const raw = await fetch(b.gateway.http('/fleet/rollouts'), {
      method: 'POST',
      headers: { ...bearer(DEVICE_TOKEN), 'Content-Type': 'application/json' },
      body: '{"percent":',
    });
    expect(raw.status).toBe(400);
    expect((await fetch(b.gateway.http('/fleet/rollouts'))).status).toBe(401);

    const agent = new Client({ name: 'rollouts', version: '1.0.0' });
    await agent.connect(new StreamableHTTPClientTransport(new URL(a.gateway.http('/mcp')), { requestInit: { headers: bearer(DEVICE_TOKEN) } }));
    try {
      const made = await agent.callTool({ name: 'fleet_rollout_create', arguments: { id: 'by-tool', firmware_id: 'bread-2.5.0', percent: 5 } });
      expect(made.isError).toBeFalsy();
      const widened = await agent.callTool({ name: 'fleet_rollout_change', arguments: { rollout_id: 'by-tool', action: 'widen', percent: 1 } });
      expect(widened.isError).toBe(true);
      expect(JSON.stringify(widened.content)).toMatch(/only widens/);
      const listed = await agent.callTool({ name: 'fleet_rollout_list', arguments: {} });
      expect(JSON.stringify(listed.structuredContent ?? listed.content)).toContain('by-tool');
    } finally {
      await agent.close();
    }
  });
});

describe('an MQTT endpoint move', () => {
  const tokensDir = mkdtempSync(join(tmpdir(), 'vtg-rollouts-mqtt-'));
  const tokensFile = join(tokensDir, 'tokens.yaml');
  writeFileSync(tokensFile, TOKENS, { mode: 0o600 });
  let stack: XiaozhiStack;
  const devices: MqttXiaozhiDevice[] = [];

  beforeAll(async () => {
    stack = await startXiaozhiStack({
      AUTH_TOKENS: '',
      AUTH_TOKENS_FILE: tokensFile,
      XIAOZHI_MQTT_PORT: 0,
      XIAOZHI_MQTT_HOST: '127.0.0.1',
      XIAOZHI_TRANSPORT: 'mqtt',
    });
  });

  afterAll(async () => {
    await Promise.all(devices.splice(0).map((device) => device.close()));
    await stack?.close();
    rmSync(tokensDir, { recursive: true, force: true });
  });

  it("gives the devices of the rollout the new endpoint, their own credentials kept, and the others the gateway's", async () => {
    const moved = new MqttXiaozhiDevice({ deviceId: 'aa:bb:cc:20:00:01' });
    const stays = new MqttXiaozhiDevice({ deviceId: 'aa:bb:cc:20:00:02' });
    devices.push(moved, stays);
    await moved.requestConfiguration(stack.gateway.http('/xiaozhi/ota/'));
    const before = { ...moved.configuration.mqtt };
    // `ops` reaches the lab's boards by its grant, even before they first connect.
    const move = await postJson(stack.gateway, '/fleet/rollouts', AGENT_TOKEN, {
      endpoint: { mqtt_endpoint: 'mqtt-eu.example.com:8883' },
      globs: ['aa:bb:cc:20:00:0*1'],
    });
    expect(move.status).toBe(201);
    await moved.requestConfiguration(stack.gateway.http('/xiaozhi/ota/'));
    await stays.requestConfiguration(stack.gateway.http('/xiaozhi/ota/'));
    expect(moved.configuration.mqtt).toEqual({ ...before, endpoint: 'mqtt-eu.example.com:8883' });
    expect(stays.configuration.mqtt.endpoint).toBe(before.endpoint);
  });
});
