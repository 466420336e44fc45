/** @jest-environment ./test/support/native-typed-arrays.environment.js */
import { createHash, randomBytes } from 'crypto';
import type Redis from 'ioredis';
import { bearer, eventually, getJson, mcpAgent, postJson } from '../support/fleet-client';
import { inspector, removeKeys, TEST_REDIS_URL, uniquePrefix } from '../support/redis';
import { sine } from '../support/scripted-speech-server';
import { TestSocket, UpgradeRefused } from '../support/test-socket';
import { MqttXiaozhiDevice } from '../support/xiaozhi/mqtt-device';
import { XiaozhiConnectionError, XiaozhiDevice, XiaozhiDeviceOptions } from '../support/xiaozhi/xiaozhi-device';
import { DEVICE_TOKEN, startXiaozhiStack, XiaozhiStack } from '../support/xiaozhi/xiaozhi-stack';

const OWNER_TOKEN = 'activation-owner-secret';
const OTHER_OWNER_TOKEN = 'activation-other-owner-secret';
const STRANGER_TOKEN = 'activation-stranger-secret';

/** A fresh locally administered MAC: each test's devices are its own. */
const mac = () => ['02', ...[...randomBytes(5)].map((byte) => byte.toString(16).padStart(2, '0'))].join(':');

/** The status an upgrade was refused with. */
async function refusal(connecting: Promise<unknown>): Promise<number | undefined> {
  try {
    await connecting;
    return undefined;
  } catch (error) {
    if (error instanceof XiaozhiConnectionError || error instanceof UpgradeRefused) return error.status;
    throw error;
  }
}

/** The value of `gateway_device_activations_total{outcome}` in a `/metrics` text. */
const activationCount = (metrics: string, outcome: string): number =>
  Number(new RegExp(`^gateway_device_activations_total\\{outcome="${outcome}"\\} (\\d+)`, 'm').exec(metrics)?.[1] ?? 0);

/**
 * Activation and per-device credentials across two replicas on one Redis (A and B, both in this
 * process): a simulated firmware with no owner boots on A, shows and speaks its code, polls
 * `<ota>/activate`, is bound by its owner's token on B, gets its own secret once, and from then on
 * is its owner's alone; revocation, rotation and unbinding act on one device, on both replicas.
 */
describe('xiaozhi device activation across replicas', () => {
  const prefix = uniquePrefix();
  const settings = {
    REDIS_URL: TEST_REDIS_URL,
    REDIS_KEY_PREFIX: prefix,
    AUTH_TOKENS: `${OWNER_TOKEN},${OTHER_OWNER_TOKEN},${STRANGER_TOKEN},${DEVICE_TOKEN}`,
    XIAOZHI_ACTIVATION: 'required',
    // Every test here activates from 127.0.0.1 with one token: the limits are the guessing test's.
    XIAOZHI_ACTIVATION_ATTEMPTS_PER_ADDRESS: 100,
    XIAOZHI_ACTIVATION_ATTEMPTS_PER_PRINCIPAL: 100,
  };
  let redis: Redis;
  let a: XiaozhiStack;
  let b: XiaozhiStack;
  const devices: XiaozhiDevice[] = [];
  const otaOf = (stack: XiaozhiStack) => stack.gateway.http('/xiaozhi/ota/');
  const sessionOf = (stack: XiaozhiStack) => stack.gateway.ws('/xiaozhi/v1/');

  const newDevice = (options: XiaozhiDeviceOptions = {}): XiaozhiDevice => {
    const device = new XiaozhiDevice({ deviceId: mac(), ...options });
    devices.push(device);
    return device;
  };

  /** A device activated by `owner` on B after asking A: its first configuration answer after binding carries its secret, returned. */
  const activated = async (device: XiaozhiDevice, owner = OWNER_TOKEN): Promise<string> => {
    const first = await device.requestConfiguration(otaOf(a));
    expect(first.status).toBe(200);
    const bound = await postJson(b.gateway, '/devices/activate', owner, { code: first.body.activation.code });
    expect(bound).toEqual({ status: 200, body: { device: device.identity.deviceId, bound: true } });
    const issued = await device.requestConfiguration(otaOf(a));
    expect(issued.body.websocket.token).toMatch(/^dev_/);
    return issued.body.websocket.token;
  };

  beforeAll(async () => {
    redis = await inspector();
    [a, b] = await Promise.all([startXiaozhiStack(settings), startXiaozhiStack(settings)]);
  }, 30_000);

  afterEach(async () => {
    await Promise.all(devices.splice(0).map((device) => device.close()));
  });

  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await removeKeys(redis, prefix);
    redis.disconnect();
  });

  it('takes an unowned firmware from its code to a session of its own, reachable by its owner only', async () => {
    const device = newDevice();
    const id = device.identity.deviceId;

    const first = await device.requestConfiguration(otaOf(a));
    expect(first.status).toBe(200);
    const { code, challenge, timeout_ms: timeoutMs } = first.body.activation;
    expect(code).toMatch(/^\d{6}$/);
    expect(challenge).toMatch(/^[0-9a-f]{64}$/);
    expect(timeoutMs).toBe(300_000);
    // No credential before activation: no session section at all, so nothing to connect with.
    expect(first.body.websocket).toBeUndefined();
    expect(first.body.mqtt).toBeUndefined();
    // What the firmware shows and speaks: the message, then the code digit by digit.
    expect(device.activationPrompt()).toEqual({ message: expect.stringContaining(code), digits: [...code] });

    // Asking again (on the other replica) while the code lives: the same code.
    const again = await device.requestConfiguration(otaOf(b));
    expect(again.body.activation.code).toBe(code);

    expect((await device.activate(otaOf(a))).status).toBe(202);
    expect((await device.activate(otaOf(b))).status).toBe(202);

    const bound = await postJson(b.gateway, '/devices/activate', OWNER_TOKEN, { code });
    expect(bound).toEqual({ status: 200, body: { device: id, bound: true } });
    expect((await device.activate(otaOf(a))).status).toBe(200);

    const issued = await device.requestConfiguration(otaOf(a));
    expect(issued.body.activation).toBeUndefined();
    const secret = issued.body.websocket.token;
    expect(secret).toMatch(/^dev_[A-Za-z0-9_-]{43}$/);
    expect(issued.body.websocket.url).toBe(sessionOf(a));

    // Stored only as a hash: no key or value in Redis holds the secret itself.
    const stored = await redis.keys(`${prefix}activation:*`);
    const values = await Promise.all(
      stored.map(async (key) => ((await redis.type(key)) === 'hash' ? JSON.stringify(await redis.hgetall(key)) : await redis.get(key))),
    );
    expect([...stored, ...values].join('\n')).not.toContain(secret);
    expect(stored).toContain(`${prefix}activation:secret:${createHash('sha256').update(secret).digest('hex')}`);

    // Given once: the next answer has no token, and the firmware keeps the one it stored.
    const later = await device.requestConfiguration(otaOf(b));
    expect(later.body.websocket).toEqual({ url: sessionOf(b) });
    expect(device.configuration.websocket.token).toBe(secret);

    await device.connect();
    await eventually(async () => (await getJson(b.gateway, `/devices/${id}`, OWNER_TOKEN)).status === 200, 5000, 'the device listed on B');

    const ownerList = await getJson(b.gateway, '/devices', OWNER_TOKEN);
    expect(ownerList.body.devices.map((entry: { id: string }) => entry.id)).toContain(id);
    const strangerList = await getJson(b.gateway, '/devices', STRANGER_TOKEN);
    expect(strangerList.body.devices.map((entry: { id: string }) => entry.id)).not.toContain(id);

    const strangerSays = await postJson(b.gateway, `/devices/${id}/say`, STRANGER_TOKEN, { text: 'Not yours.' });
    expect(strangerSays.status).toBe(404);
    const ownerSays = await postJson(b.gateway, `/devices/${id}/say`, OWNER_TOKEN, { text: 'Welcome home.' });
    expect(ownerSays.status).toBe(200);
    await device.next('tts', (message) => message.state === 'sentence_start' && message.text === 'Welcome home.', 10_000);

    // Nobody else's token connects as it, on either replica; the shared device token neither.
    for (const token of [STRANGER_TOKEN, DEVICE_TOKEN]) {
      for (const stack of [a, b]) {
        const impostor = newDevice({ deviceId: id });
        expect(await refusal(impostor.connect(sessionOf(stack), token))).toBe(409);
      }
    }

    // The device secret opens its xiaozhi session and nothing else: not the HTTP API, not MCP, not the LLM gateway.
    expect((await getJson(b.gateway, '/devices', secret)).status).toBe(403);
    const mcp = await fetch(b.gateway.http('/mcp'), {
      method: 'POST',
      headers: { ...bearer(secret), 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect([401, 403]).toContain(mcp.status);
    expect(await refusal(TestSocket.open(b.gateway.ws('/'), { headers: { ...bearer(secret), 'Device-Id': id } }))).toBe(403);
  }, 30_000);

  it("goes on, once bound, to its group's firmware, a push whose receipt reaches spoken, and a budget that stops its spending", async () => {
    const device = newDevice();
    const id = device.identity.deviceId;
    await activated(device);
    const outside = newDevice();
    await activated(outside);

    // A firmware of the owner's, rolled out to this device alone: offered to it, not to the other.
    const firmware = await postJson(b.gateway, '/fleet/firmware', OWNER_TOKEN, { version: '9.9.9', url: 'https://firmware.example/box.bin', boards: ['*'] });
    expect(firmware.status).toBe(201);
    const rollout = await postJson(b.gateway, '/fleet/rollouts', OWNER_TOKEN, { firmware_id: firmware.body.id, devices: [id] });
    expect(rollout.status).toBe(201);
    await eventually(async () => (await device.requestConfiguration(otaOf(a))).body.firmware?.version === '9.9.9', 5000, 'the rollout offered on A');
    expect((await outside.requestConfiguration(otaOf(a))).body.firmware).toBeUndefined();

    // A push made on B to the device on A: its receipt reaches spoken once A's tts stop went out, on both replicas.
    await device.connect(sessionOf(a));
    await eventually(async () => (await getJson(b.gateway, `/devices/${id}`, OWNER_TOKEN)).status === 200, 5000, 'the device listed on B');
    a.tts.reply({ samples: sine(440, 0.3, 24_000) });
    const said = await postJson(b.gateway, `/devices/${id}/say`, OWNER_TOKEN, { text: 'Dinner is ready.' });
    expect(said.body).toMatchObject({ push_id: expect.stringMatching(/^push-/) });
    await device.next('tts', (message) => message.state === 'stop', 10_000);
    for (const stack of [b, a])
      await eventually(async () => (await getJson(stack.gateway, `/pushes/${said.body.push_id}`, OWNER_TOKEN)).body.state === 'spoken', 5000, 'spoken');
    expect((await getJson(b.gateway, `/pushes/${said.body.push_id}`, STRANGER_TOKEN)).status).toBe(404);

    // A budget of synthesized characters that one answer spends: the next turn gets an alert, and no model call.
    expect(
      (
        await fetch(b.gateway.http(`/devices/${id}/budget`), {
          method: 'PUT',
          headers: { ...bearer(OWNER_TOKEN), 'Content-Type': 'application/json' },
          body: JSON.stringify({ tts_chars_per_day: 20 }),
        })
      ).status,
    ).toBe(200);
    a.stt.reply({ text: 'hello' }, { text: 'hello again' });
    a.llm.reply({ text: 'Hi there, I am here.' });
    a.tts.reply({ samples: sine(440, 0.3, 24_000) });
    const asked = a.llm.requests.length;
    device.listen('auto');
    await device.say('hello');
    await device.next('tts', (message) => message.state === 'stop', 10_000);
    await device.waitForState('listening', 5000);
    await device.say('hello again');
    expect(await device.next<any>('alert', undefined, 10_000)).toMatchObject({
      message: expect.stringMatching(/budget of 20 synthesized characters is spent/),
    });
    expect(a.llm.requests.length).toBe(asked + 1);
    const usage = await getJson(b.gateway, `/devices/${id}/usage`, OWNER_TOKEN);
    expect(usage.body.usage.tts_chars.day).toMatchObject({ limit: 20, remaining: 0 });
    // At most one request over: the push and the answer, each charged whole once it was allowed.
    expect(usage.body.usage.tts_chars.day.used).toBeLessThanOrEqual(20 + 'Hi there, I am here.'.length);
    expect((await getJson(b.gateway, `/devices/${id}/usage`, STRANGER_TOKEN)).status).toBe(404);
  }, 60_000);

  it("binds through the activate_device tool of an MCP agent, in the caller's name", async () => {
    const device = newDevice();
    const first = await device.requestConfiguration(otaOf(a));
    const agent = await mcpAgent(b.gateway, OTHER_OWNER_TOKEN);
    try {
      const wrong = await agent.callTool({ name: 'activate_device', arguments: { code: first.body.activation.code === '000000' ? '000001' : '000000' } });
      expect(wrong.isError).toBe(true);
      const bound = await agent.callTool({ name: 'activate_device', arguments: { code: first.body.activation.code } });
      expect(bound.isError).toBeFalsy();
      expect(bound.structuredContent ?? JSON.parse((bound.content as { text: string }[])[0].text)).toEqual({ device: device.identity.deviceId, bound: true });
    } finally {
      await agent.close();
    }
    const issued = await device.requestConfiguration(otaOf(b));
    await device.connect(sessionOf(b), issued.body.websocket.token);
    await eventually(
      async () => (await getJson(a.gateway, `/devices/${device.identity.deviceId}`, OTHER_OWNER_TOKEN)).status === 200,
      5000,
      'listed to its owner',
    );
    expect((await getJson(a.gateway, `/devices/${device.identity.deviceId}`, OWNER_TOKEN)).status).toBe(404);
  }, 20_000);

  it('binds a code once: a replayed activation is refused exactly as a wrong code is', async () => {
    const device = newDevice();
    const first = await device.requestConfiguration(otaOf(a));
    const code: string = first.body.activation.code;
    expect((await postJson(a.gateway, '/devices/activate', OWNER_TOKEN, { code })).status).toBe(200);

    const replayed = await postJson(b.gateway, '/devices/activate', OTHER_OWNER_TOKEN, { code });
    const wrongCode = code === '000000' ? '000001' : '000000';
    const wrong = await postJson(b.gateway, '/devices/activate', OTHER_OWNER_TOKEN, { code: wrongCode });
    expect(replayed.status).toBe(404);
    expect(replayed.body).toEqual(wrong.body);
    expect(replayed.body.error.code).toBe('NOT_FOUND');

    // Still the first owner's: the second cannot reach or connect as it.
    const impostor = newDevice({ deviceId: device.identity.deviceId });
    expect(await refusal(impostor.connect(sessionOf(b), OTHER_OWNER_TOKEN))).toBe(409);

    // A bound device asking again gets no new code.
    const issued = await device.requestConfiguration(otaOf(b));
    expect(issued.body.activation).toBeUndefined();
    expect(issued.body.websocket.token).toMatch(/^dev_/);

    expect((await postJson(a.gateway, '/devices/activate', OWNER_TOKEN, { code: 'twelve' })).body.error.code).toBe('INVALID_MESSAGE');
  }, 20_000);

  it('refuses a device that claims another Device-Id with its own secret, and one whose Client-Id is not the activated one', async () => {
    const first = newDevice();
    const second = newDevice();
    await activated(first);
    const secondSecret = await activated(second);

    const claiming = newDevice({ deviceId: first.identity.deviceId, clientId: second.identity.clientId });
    expect(await refusal(claiming.connect(sessionOf(a), secondSecret))).toBe(403);
    expect(await refusal(claiming.connect(sessionOf(b), secondSecret))).toBe(403);

    // Same MAC, another Client-Id (a clone): its configuration answers carry no secret.
    const clone = newDevice({ deviceId: second.identity.deviceId });
    await postJson(b.gateway, `/devices/${second.identity.deviceId}/credential/rotate`, OWNER_TOKEN, {});
    const cloneAnswer = await clone.requestConfiguration(otaOf(a));
    expect(cloneAnswer.body.websocket).toEqual({ url: sessionOf(a) });
    expect(cloneAnswer.body.activation).toBeUndefined();
  }, 20_000);

  it('rotates a secret at the next configuration answer: the old one stops working', async () => {
    const device = newDevice();
    const old = await activated(device);
    expect(await postJson(b.gateway, `/devices/${device.identity.deviceId}/credential/rotate`, STRANGER_TOKEN, {})).toMatchObject({ status: 404 });
    expect(await postJson(b.gateway, `/devices/${device.identity.deviceId}/credential/rotate`, OWNER_TOKEN, {})).toMatchObject({ status: 200 });
    const renewed = await device.requestConfiguration(otaOf(b));
    const fresh = renewed.body.websocket.token;
    expect(fresh).toMatch(/^dev_/);
    expect(fresh).not.toBe(old);
    const withOld = newDevice({ deviceId: device.identity.deviceId, clientId: device.identity.clientId });
    expect(await refusal(withOld.connect(sessionOf(a), old))).toBe(403);
    await device.connect();
  }, 20_000);

  it('closes a revoked device on every replica, even while it races to reconnect, and lets it back in on neither', async () => {
    const device = newDevice();
    const id = device.identity.deviceId;
    const secret = await activated(device);
    await device.connect(sessionOf(a));
    await eventually(async () => (await getJson(b.gateway, `/devices/${id}`, OWNER_TOKEN)).status === 200, 5000, 'listed');

    // A second connection of the same device races the revocation on the other replica.
    const racer = newDevice({ deviceId: id, clientId: device.identity.clientId });
    const racing = racer.connect(sessionOf(b), secret).then(
      () => 'connected',
      (error: XiaozhiConnectionError) => `refused ${error.status}`,
    );
    const revoked = await postJson(b.gateway, `/devices/${id}/credential/revoke`, OWNER_TOKEN, {});
    expect(revoked).toEqual({ status: 200, body: { device: id, revoked: true } });
    await racing;

    // Within seconds, whatever won the race is closed, on both replicas.
    await eventually(() => !device.connected && !racer.connected, 5000, 'every connection of the revoked device closed');
    await eventually(async () => (await getJson(b.gateway, `/devices/${id}`, OWNER_TOKEN)).status === 404, 5000, 'gone from the directory');
    for (const stack of [a, b]) {
      const again = newDevice({ deviceId: id, clientId: device.identity.clientId });
      expect(await refusal(again.connect(sessionOf(stack), secret))).toBe(403);
    }
    // Revoked is not rotated: its next configuration answer issues nothing.
    expect((await device.requestConfiguration(otaOf(a))).body.websocket).toEqual({ url: sessionOf(a) });
  }, 30_000);

  it("unbinds one device and leaves another bound device's session and secret untouched", async () => {
    const kept = newDevice();
    const dropped = newDevice();
    const keptSecret = await activated(kept);
    await activated(dropped);
    await kept.connect(sessionOf(a));
    await dropped.connect(sessionOf(b));

    expect(await postJson(a.gateway, `/devices/${dropped.identity.deviceId}/unbind`, STRANGER_TOKEN, {})).toMatchObject({ status: 404 });
    expect(await postJson(a.gateway, `/devices/${dropped.identity.deviceId}/unbind`, OWNER_TOKEN, {})).toEqual({
      status: 200,
      body: { device: dropped.identity.deviceId, unbound: true },
    });
    await eventually(() => !dropped.connected, 5000, 'the unbound device closed');
    expect(kept.connected).toBe(true);
    expect((await getJson(b.gateway, `/devices/${kept.identity.deviceId}`, OWNER_TOKEN)).status).toBe(200);

    // The unbound device is a new one again: a fresh code.
    expect((await dropped.requestConfiguration(otaOf(a))).body.activation.code).toMatch(/^\d{6}$/);
    // The kept one still gets in with its secret, on the other replica too.
    const reconnect = newDevice({ deviceId: kept.identity.deviceId, clientId: kept.identity.clientId });
    await reconnect.connect(sessionOf(b), keptSecret);
  }, 30_000);

  it("checks a serial-number device's HMAC answer against its provisioned key, and refuses a wrong one", async () => {
    const key = randomBytes(32);
    const honest = newDevice({ serialNumber: 'SN-HONEST-0001', activationKey: key });
    const forged = newDevice({
      deviceId: honest.identity.deviceId,
      clientId: honest.identity.clientId,
      serialNumber: 'SN-HONEST-0001',
      activationKey: randomBytes(32),
    });
    const id = honest.identity.deviceId;

    const provision = (value: string) =>
      fetch(a.gateway.http(`/devices/${id}/activation-key`), {
        method: 'PUT',
        headers: { ...bearer(OWNER_TOKEN), 'Content-Type': 'application/json' },
        body: JSON.stringify({ key: value }),
      });
    expect((await provision('not-hex')).status).toBe(400);
    expect((await provision(key.toString('hex'))).status).toBe(200);

    const first = await honest.requestConfiguration(otaOf(a));
    await forged.requestConfiguration(otaOf(a));
    expect(forged.configuration.activation).toEqual(first.body.activation);

    const before = activationCount(await (await fetch(b.gateway.http('/metrics'), { headers: bearer(OWNER_TOKEN) })).text(), 'hmac_refused');
    const refused = await forged.activate(otaOf(b));
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('FORBIDDEN');
    expect(activationCount(await (await fetch(b.gateway.http('/metrics'), { headers: bearer(OWNER_TOKEN) })).text(), 'hmac_refused')).toBe(before + 1);

    expect((await honest.activate(otaOf(b))).status).toBe(202);
    expect((await postJson(b.gateway, '/devices/activate', OWNER_TOKEN, { code: first.body.activation.code })).status).toBe(200);
    expect((await forged.activate(otaOf(a))).status).toBe(403);
    expect((await honest.activate(otaOf(a))).status).toBe(200);
    const issued = await honest.requestConfiguration(otaOf(a));
    expect(issued.body.websocket.token).toMatch(/^dev_/);
    await honest.connect();
  }, 30_000);
});

/** A serial-number device bound before it answered its challenge: no secret until it does. */
describe('xiaozhi activation of a serial-number device bound before its proof', () => {
  let stack: XiaozhiStack;

  beforeAll(async () => {
    stack = await startXiaozhiStack({ AUTH_TOKENS: OWNER_TOKEN, XIAOZHI_ACTIVATION: 'required' });
  }, 30_000);

  afterAll(() => stack?.close());

  it('answers its challenge alone (no code) and issues its secret only once the HMAC is right', async () => {
    const key = randomBytes(32);
    const device = new XiaozhiDevice({ deviceId: mac(), serialNumber: 'SN-LATE-0001', activationKey: key });
    const ota = stack.gateway.http('/xiaozhi/ota/');
    try {
      const provisioned = await fetch(stack.gateway.http(`/devices/${device.identity.deviceId}/activation-key`), {
        method: 'PUT',
        headers: { ...bearer(OWNER_TOKEN), 'Content-Type': 'application/json' },
        body: JSON.stringify({ key: key.toString('hex') }),
      });
      expect(provisioned.status).toBe(200);
      const first = await device.requestConfiguration(ota);
      expect((await postJson(stack.gateway, '/devices/activate', OWNER_TOKEN, { code: first.body.activation.code })).status).toBe(200);

      const waiting = await device.requestConfiguration(ota);
      expect(waiting.body.websocket).toBeUndefined();
      expect(waiting.body.activation).toEqual({ message: expect.any(String), challenge: first.body.activation.challenge, timeout_ms: 300_000 });
      expect(device.activationPrompt()).toBeUndefined();

      expect((await device.activate(ota)).status).toBe(200);
      const issued = await device.requestConfiguration(ota);
      expect(issued.body.activation).toBeUndefined();
      expect(issued.body.websocket.token).toMatch(/^dev_/);
    } finally {
      await device.close();
    }
  }, 30_000);
});

/**
 * Guessing codes: each attempt counted, every wrong one answered alike, and the limits reached
 * before any code can be found; a right code past a limit is refused too (the limit comes first).
 */
describe('activation code guessing', () => {
  let stack: XiaozhiStack;

  beforeAll(async () => {
    stack = await startXiaozhiStack({
      AUTH_TOKENS: `${OWNER_TOKEN},${STRANGER_TOKEN}`,
      XIAOZHI_ACTIVATION: 'required',
      XIAOZHI_ACTIVATION_ATTEMPTS_PER_ADDRESS: 5,
    });
  }, 30_000);

  afterAll(() => stack?.close());

  it('answers wrong codes alike, stops them at the limit, and counts them in /metrics', async () => {
    const device = new XiaozhiDevice({ deviceId: mac() });
    try {
      const answer = await device.requestConfiguration(stack.gateway.http('/xiaozhi/ota/'));
      const code: string = answer.body.activation.code;
      const guesses = Array.from({ length: 5 }, (_, index) => String((Number(code) + 1 + index) % 1_000_000).padStart(6, '0'));
      const wrong = [];
      for (const guess of guesses) wrong.push(await postJson(stack.gateway, '/devices/activate', STRANGER_TOKEN, { code: guess }));
      expect(wrong.map((attempt) => attempt.status)).toEqual([404, 404, 404, 404, 404]);
      expect(new Set(wrong.map((attempt) => JSON.stringify(attempt.body))).size).toBe(1);

      const limited = await fetch(stack.gateway.http('/devices/activate'), {
        method: 'POST',
        headers: { ...bearer(STRANGER_TOKEN), 'Content-Type': 'application/json' },
        body: JSON.stringify({ code }),
      });
      expect(limited.status).toBe(429);
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(((await limited.json()) as { error: { code: string } }).error.code).toBe('RATE_LIMITED');

      const metrics = await (await fetch(stack.gateway.http('/metrics'), { headers: bearer(OWNER_TOKEN) })).text();
      expect(activationCount(metrics, 'wrong_code')).toBe(5);
      expect(activationCount(metrics, 'rate_limited')).toBe(1);
      expect(activationCount(metrics, 'bound')).toBe(0);
      expect(activationCount(metrics, 'code_issued')).toBe(1);

      // The right code was not spent by the refused attempt: the device still waits for it.
      expect((await device.activate(stack.gateway.http('/xiaozhi/ota/'))).status).toBe(202);
    } finally {
      await device.close();
    }
  }, 30_000);
});

/** Over MQTT + UDP: a bound device's MQTT password is its own secret, given once; derived passwords and revoked secrets are refused at CONNECT. */
describe('xiaozhi device activation over MQTT', () => {
  let stack: XiaozhiStack;
  const devices: MqttXiaozhiDevice[] = [];

  beforeAll(async () => {
    stack = await startXiaozhiStack({
      AUTH_TOKENS: `${OWNER_TOKEN},${STRANGER_TOKEN}`,
      XIAOZHI_ACTIVATION: 'required',
      XIAOZHI_MQTT_PORT: 0,
      XIAOZHI_MQTT_HOST: '127.0.0.1',
      XIAOZHI_TRANSPORT: 'mqtt',
    });
  }, 30_000);

  afterAll(async () => {
    await Promise.all(devices.splice(0).map((device) => device.close()));
    await stack?.close();
  });

  const activatedOverMqtt = async (): Promise<MqttXiaozhiDevice> => {
    const device = new MqttXiaozhiDevice({ deviceId: mac() });
    devices.push(device);
    const first = await device.requestConfiguration(stack.gateway.http('/xiaozhi/ota/'));
    expect(first.body.mqtt).toBeUndefined();
    expect((await postJson(stack.gateway, '/devices/activate', OWNER_TOKEN, { code: first.body.activation.code })).status).toBe(200);
    const issued = await device.requestConfiguration(stack.gateway.http('/xiaozhi/ota/'));
    expect(issued.body.mqtt).toMatchObject({ client_id: device.deviceId, username: device.deviceId, password: expect.stringMatching(/^dev_/) });
    return device;
  };

  it('connects a bound device with its own secret as its MQTT password, and refuses it anywhere else', async () => {
    const device = await activatedOverMqtt();
    const other = await activatedOverMqtt();
    const secret = String(device.configuration.mqtt.password);

    const later = await device.requestConfiguration(stack.gateway.http('/xiaozhi/ota/'));
    expect(later.body.mqtt).not.toHaveProperty('password');
    expect(device.configuration.mqtt.password).toBe(secret);

    await expect(other.connect({ password: secret })).rejects.toThrow();
    await expect(device.connect({ password: 'dev_wrong' })).rejects.toThrow();
    await device.connect();
    const hello = await device.openAudioChannel();
    expect(hello).toMatchObject({ type: 'hello', transport: 'udp' });
    await eventually(async () => (await getJson(stack.gateway, `/devices/${device.deviceId}`, OWNER_TOKEN)).status === 200, 5000, 'listed');
    expect((await getJson(stack.gateway, `/devices/${device.deviceId}`, STRANGER_TOKEN)).status).toBe(404);

    expect((await postJson(stack.gateway, `/devices/${other.deviceId}/credential/revoke`, OWNER_TOKEN, {})).status).toBe(200);
    await expect(other.connect()).rejects.toThrow();

    // Revoked while its audio channel is open: the channel and the MQTT connection end.
    expect((await postJson(stack.gateway, `/devices/${device.deviceId}/credential/revoke`, OWNER_TOKEN, {})).status).toBe(200);
    await eventually(() => device.mqtt?.connected === false, 5000, 'the MQTT connection of the revoked device closed');
    await expect(device.connect()).rejects.toThrow();
  }, 30_000);
});
