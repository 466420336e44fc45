/** @jest-environment ./test/support/native-typed-arrays.environment.js */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { mkdtempSync, rmSync, writeFileSync } from 'fs';
import { createServer, Server } from 'http';
import type Redis from 'ioredis';
import type { AddressInfo } from 'net';
import { tmpdir } from 'os';
import { join } from 'path';
import { bearer, connectDevice, eventually, GatewayAddress, getJson, postJson, pushedTexts } from '../support/fleet-client';
import { RunningGateway, startGateway } from '../support/gateway';
import { inspector, removeKeys, TEST_REDIS_URL, uniquePrefix } from '../support/redis';
import { sine } from '../support/scripted-speech-server';
import type { TestSocket } from '../support/test-socket';
import { XiaozhiDevice } from '../support/xiaozhi/xiaozhi-device';
import { AGENT_TOKEN, bootDevice, DEVICE_TOKEN, startXiaozhiStack, XiaozhiStack } from '../support/xiaozhi/xiaozhi-stack';

const OUTPUT_RATE = 24_000;
const STRANGER_TOKEN = 'receipts-stranger-secret';
/** The boards' token owns the boards; the home agent is granted them; a stranger reaches none. */
const TOKENS = `
tokens:
  - name: lab-boards
    token: ${DEVICE_TOKEN}
    devices: ["aa:bb:cc:*"]
  - name: home-agent
    token: ${AGENT_TOKEN}
    devices: ["aa:bb:cc:*"]
  - name: stranger
    token: ${STRANGER_TOKEN}
`;

const tone = (seconds: number) => ({ samples: sine(440, seconds, OUTPUT_RATE) });
const isTts = (state: string) => (message: any) => message.state === state;

/** A webhook receiver on 127.0.0.1 that records each change it is sent, answering 204. */
async function recordingHook(): Promise<{ url: string; changes: any[]; server: Server }> {
  const changes: any[] = [];
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => {
      changes.push(JSON.parse(body));
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/receipts`, changes, server };
}

const closeServer = (server: Server) =>
  new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });

/**
 * Delivery receipts across two replicas on one Redis: A holds the devices (a simulated xiaozhi
 * firmware with real Opus, LLM-gateway sockets), B is where agents push and ask. Both in this
 * process, sharing A's scripted model, recognizer and synthesizer; each posts the changes made
 * on it to its own webhook.
 */
describe('push receipts across replicas', () => {
  const prefix = uniquePrefix();
  const tokensDir = mkdtempSync(join(tmpdir(), 'vtg-receipts-'));
  const tokensFile = join(tokensDir, 'tokens.yaml');
  writeFileSync(tokensFile, TOKENS, { mode: 0o600 });
  const shared = { REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: prefix, AUTH_TOKENS: '', AUTH_TOKENS_FILE: tokensFile, XIAOZHI_DEVICE_TOKEN: DEVICE_TOKEN };
  let redis: Redis;
  let a: XiaozhiStack;
  let b: RunningGateway;
  let aHook: Awaited<ReturnType<typeof recordingHook>>;
  let bHook: Awaited<ReturnType<typeof recordingHook>>;
  const devices: XiaozhiDevice[] = [];
  const sockets: TestSocket[] = [];
  const agents: Client[] = [];

  const deviceOnA = async (id: string): Promise<XiaozhiDevice> => {
    const device = await bootDevice(a.gateway.http('/xiaozhi/ota/'), { deviceId: id });
    devices.push(device);
    await listedOn(b, id);
    return device;
  };

  const llmDeviceOnA = async (id: string): Promise<TestSocket> => {
    const socket = await connectDevice(a.gateway, id, DEVICE_TOKEN);
    sockets.push(socket);
    await listedOn(b, id);
    return socket;
  };

  const listedOn = (at: GatewayAddress, id: string, online = true) =>
    eventually(async () => ((await getJson(at, `/devices/${id}`, AGENT_TOKEN)).status === 200) === online, 10_000, `${id} ${online ? 'listed' : 'gone'}`);

  const agentOnB = async (): Promise<Client> => {
    const client = new Client({ name: 'receipts', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(b.http('/mcp')), { requestInit: { headers: bearer(AGENT_TOKEN) } }));
    agents.push(client);
    return client;
  };

  /** The receipt as B gives it to the agent, once `done` holds of it. */
  const receiptOnB = async (id: string, done: (receipt: any) => boolean, timeoutMs = 10_000): Promise<any> => {
    let receipt: any;
    await eventually(
      async () => {
        const { status, body } = await getJson(b, `/pushes/${id}`, AGENT_TOKEN);
        receipt = status === 200 ? body : undefined;
        return receipt !== undefined && done(receipt);
      },
      timeoutMs,
      `receipt ${id} (last ${JSON.stringify(receipt)})`,
    );
    return receipt;
  };
  const inState = (state: string) => (receipt: any) => receipt.state === state;
  const statesOf = (receipt: any) => receipt.history.map((step: any) => step.state);

  beforeAll(async () => {
    redis = await inspector();
    [aHook, bHook] = await Promise.all([recordingHook(), recordingHook()]);
    a = await startXiaozhiStack({ ...shared, PUSH_WEBHOOK_URL: aHook.url });
    b = await startGateway({
      ...shared,
      PUSH_WEBHOOK_URL: bHook.url,
      LLM_BASE_URL: a.llm.baseUrl,
      LLM_MAX_RETRIES: 0,
      LLM_TIMEOUT: 5,
      STT_BASE_URL: a.stt.baseUrl,
      TTS_BASE_URL: a.tts.baseUrl,
      STT_TIMEOUT: 5,
      TTS_TIMEOUT: 5,
      DEFAULT_TIMEZONE: 'Asia/Shanghai',
    });
  }, 30_000);

  afterEach(async () => {
    await Promise.all(agents.splice(0).map((agent) => agent.close()));
    await Promise.all(devices.splice(0).map((device) => device.close()));
    await Promise.all(sockets.splice(0).map((socket) => socket.close()));
    a.llm.reset();
    a.tts.reset();
  });

  afterAll(async () => {
    await b?.close();
    await a?.close();
    await Promise.all([aHook, bHook].filter(Boolean).map(({ server }) => closeServer(server)));
    if (redis) {
      await removeKeys(redis, prefix);
      redis.disconnect();
    }
    rmSync(tokensDir, { recursive: true, force: true });
  });

  it("reaches spoken on B for a push made on B to a xiaozhi device on A, once A's tts stop went out; only the pusher and the owner see it", async () => {
    const device = await deviceOnA('aa:bb:cc:01:00:01');
    a.tts.reply(tone(0.6));
    const said = await postJson(b, '/devices/aa:bb:cc:01:00:01/say', AGENT_TOKEN, { text: 'Dinner is ready.' });
    expect(said).toMatchObject({ status: 200, body: { delivered: 'spoken', push_id: expect.stringMatching(/^push-/), turn_id: said.body.push_id } });
    const id = said.body.push_id;
    await device.next('tts', isTts('sentence_start'));
    // Sent, not spoken, while its audio plays.
    expect((await getJson(b, `/pushes/${id}`, AGENT_TOKEN)).body.state).toBe('sent');
    await device.next('tts', isTts('stop'));
    const stopAt = Date.now();
    const receipt = await receiptOnB(id, inState('spoken'));
    expect(Date.now() - stopAt).toBeLessThan(1000);
    expect(receipt).toMatchObject({ id, device: 'aa:bb:cc:01:00:01', kind: 'say', turn_id: id });
    expect(statesOf(receipt)).toEqual(['queued', 'sent', 'spoken']);
    // Spoken no sooner than its paced audio ended: 0.6 s of it, less the 3 frames (180 ms) pacing sends ahead.
    const [, sent, spoken] = receipt.history.map((step: any) => Date.parse(step.at));
    expect(spoken - sent).toBeGreaterThanOrEqual(600 - 3 * 60);
    // The same from A; the device's owner sees it too; anyone else gets what an unknown id gets.
    expect((await getJson(a.gateway, `/pushes/${id}`, AGENT_TOKEN)).body).toEqual(receipt);
    expect((await getJson(b, `/pushes/${id}`, DEVICE_TOKEN)).status).toBe(200);
    const stranger = await getJson(b, `/pushes/${id}`, STRANGER_TOKEN);
    expect(stranger).toEqual({ status: 404, body: { error: { code: 'NOT_FOUND', message: expect.any(String) } } });
    expect((await getJson(b, '/pushes/push-00000000-0000-0000-0000-000000000000', AGENT_TOKEN)).status).toBe(404);
    expect((await getJson(b, `/pushes/${'x'.repeat(5000)}`, AGENT_TOKEN)).status).toBe(404);
    const anonymous = await fetch(b.http(`/pushes/${id}`));
    expect(anonymous.status).toBe(401);
    // Each change went to the webhook of the instance where it happened: taken on B, sent and spoken on A.
    await eventually(() => aHook.changes.filter((change) => change.id === id).length === 2, 5000, "A's webhook");
    expect(bHook.changes.filter((change) => change.id === id).map((change) => change.state)).toEqual(['queued']);
    expect(aHook.changes.filter((change) => change.id === id).map((change) => change.state)).toEqual(['sent', 'spoken']);
    expect(aHook.changes.find((change) => change.id === id && change.state === 'spoken')).toMatchObject({
      event: 'push.state',
      receipt: { id, state: 'spoken', device: 'aa:bb:cc:01:00:01' },
    });
  });

  it("gives each device of a fan-out its own receipt, refused ones included, and follows device_say's as MCP progress until spoken", async () => {
    const device = await deviceOnA('aa:bb:cc:01:00:02');
    a.tts.reply(tone(0.3), tone(0.3));
    const fanOut = await postJson(b, '/devices/say', AGENT_TOKEN, { devices: ['aa:bb:cc:01:00:02', 'aa:bb:cc:01:00:99'], text: 'Everyone to the table.' });
    expect(fanOut.status).toBe(200);
    const [online, offline] = fanOut.body.results;
    expect(online).toMatchObject({ device: 'aa:bb:cc:01:00:02', delivered: 'spoken', push_id: expect.stringMatching(/^push-/) });
    expect(offline).toMatchObject({ device: 'aa:bb:cc:01:00:99', push_id: expect.stringMatching(/^push-/), error: { code: 'DEVICE_OFFLINE' } });
    expect(online.push_id).not.toBe(offline.push_id);
    const refused = await receiptOnB(offline.push_id, inState('refused'));
    expect(refused.history.at(-1)).toMatchObject({ state: 'refused', reason: 'DEVICE_OFFLINE' });
    // A push to one device, and a pushed turn, that are refused: the error says which receipt says so.
    for (const path of ['/devices/aa:bb:cc:01:00:99/say', '/devices/aa:bb:cc:01:00:99/turns']) {
      const single = await postJson(b, path, AGENT_TOKEN, { text: 'Anyone there?' });
      expect(single).toMatchObject({ status: 404, body: { error: { code: 'DEVICE_OFFLINE', push_id: expect.stringMatching(/^push-/) } } });
      expect((await receiptOnB(single.body.error.push_id, inState('refused'))).history.at(-1)).toMatchObject({ state: 'refused', reason: 'DEVICE_OFFLINE' });
    }
    await device.next('tts', isTts('stop'));
    await receiptOnB(online.push_id, inState('spoken'));

    const agent = await agentOnB();
    const progress: string[] = [];
    const result = await agent.callTool(
      { name: 'device_say', arguments: { device_id: 'aa:bb:cc:01:00:02', text: 'Bring the salad.', wait_s: 10 } },
      CallToolResultSchema,
      { onprogress: (update) => progress.push(update.message ?? '') },
    );
    expect(result.isError).toBeFalsy();
    const answer = (result.structuredContent ?? JSON.parse((result.content as any)[0].text)) as any;
    expect(answer).toMatchObject({ delivered: 'spoken', state: 'spoken', push_id: expect.stringMatching(/^push-/) });
    expect(progress).toEqual(expect.arrayContaining(['aa:bb:cc:01:00:02: sent', 'aa:bb:cc:01:00:02: spoken']));
    expect(progress.at(-1)).toBe('aa:bb:cc:01:00:02: spoken');
  });

  it('says interrupted, with why, when the device aborts mid-sentence', async () => {
    const device = await deviceOnA('aa:bb:cc:01:00:03');
    a.tts.reply(tone(4));
    const said = await postJson(b, '/devices/aa:bb:cc:01:00:03/say', AGENT_TOKEN, { text: 'Once upon a time, in a land far away.' });
    await device.next('tts', isTts('sentence_start'));
    await new Promise((resolve) => setTimeout(resolve, 300));
    device.abort();
    await device.next('tts', isTts('stop'));
    const receipt = await receiptOnB(said.body.push_id, inState('interrupted'));
    expect(statesOf(receipt)).toEqual(['queued', 'sent', 'interrupted']);
    expect(receipt.history.at(-1).reason).toBe('abort');
  });

  it('says interrupted when a newer push cuts it, and the newer one reaches spoken', async () => {
    const device = await deviceOnA('aa:bb:cc:01:00:04');
    a.tts.reply(tone(4), tone(0.3));
    const first = await postJson(b, '/devices/aa:bb:cc:01:00:04/say', AGENT_TOKEN, { text: 'A long story.' });
    await device.next('tts', isTts('sentence_start'));
    const second = await postJson(b, '/devices/aa:bb:cc:01:00:04/say', AGENT_TOKEN, { text: 'The doorbell is ringing.', interrupt: true });
    expect((await receiptOnB(first.body.push_id, inState('interrupted'))).history.at(-1).reason).toBe('interrupted_by_push');
    await receiptOnB(second.body.push_id, inState('spoken'));
  });

  it('says interrupted when the device disconnects mid-sentence, and for a push that waited behind it', async () => {
    const device = await deviceOnA('aa:bb:cc:01:00:05');
    a.tts.reply(tone(4), tone(0.3));
    const speaking = await postJson(b, '/devices/aa:bb:cc:01:00:05/say', AGENT_TOKEN, { text: 'A sentence that will not end.' });
    await device.next('tts', isTts('sentence_start'));
    const waiting = await postJson(b, '/devices/aa:bb:cc:01:00:05/say', AGENT_TOKEN, { text: 'Next in line.' });
    expect(waiting.body.delivered).toBe('queued');
    device.disconnect();
    const cut = await receiptOnB(speaking.body.push_id, inState('interrupted'));
    expect(statesOf(cut)).toEqual(['queued', 'sent', 'interrupted']);
    expect(cut.history.at(-1).reason).toBe('disconnected');
    const unsaid = await receiptOnB(waiting.body.push_id, inState('interrupted'));
    expect(statesOf(unsaid)).toEqual(['queued', 'interrupted']);
  });

  it("reaches spoken for a xiaozhi device's pushed turn once its answer's tts stop went out", async () => {
    const device = await deviceOnA('aa:bb:cc:01:00:06');
    a.llm.reply({ text: 'It is sunny today.' });
    a.tts.reply(tone(0.5));
    const turn = await postJson(b, '/devices/aa:bb:cc:01:00:06/turns', AGENT_TOKEN, { text: 'What is the weather?' });
    expect(turn).toMatchObject({ status: 200, body: { push_id: expect.stringMatching(/^push-/) } });
    await device.next('tts', isTts('sentence_start'), 8000);
    await device.next('tts', isTts('stop'));
    const receipt = await receiptOnB(turn.body.push_id, inState('spoken'));
    expect(receipt).toMatchObject({ kind: 'turn' });
    expect(statesOf(receipt)).toEqual(['queued', 'sent', 'spoken']);
  });

  it("reaches spoken for an LLM-gateway device's pushed sentence and pushed turn (their final llm_response)", async () => {
    const socket = await llmDeviceOnA('aa:bb:cc:02:00:01');
    const said = await postJson(b, '/devices/aa:bb:cc:02:00:01/say', AGENT_TOKEN, { text: 'The laundry is done.' });
    expect(await pushedTexts(socket, 1)).toEqual(['The laundry is done.']);
    expect(statesOf(await receiptOnB(said.body.push_id, inState('spoken')))).toEqual(['queued', 'sent', 'spoken']);

    a.llm.reply({ text: 'It is sunny today.' });
    const turn = await postJson(b, '/devices/aa:bb:cc:02:00:01/turns', AGENT_TOKEN, { text: 'What is the weather?' });
    expect(turn).toMatchObject({ status: 200, body: { push_id: expect.stringMatching(/^push-/) } });
    let final: any;
    do final = await socket.next(8000);
    while (!(final.type === 'llm_response' && final.is_final));
    const receipt = await receiptOnB(turn.body.push_id, inState('spoken'));
    expect(receipt).toMatchObject({ kind: 'turn', turn_id: turn.body.push_id });
  });

  it('holds a push for an offline device it owns, delivers it at its next connection, and expires one whose hold runs out', async () => {
    const first = await llmDeviceOnA('aa:bb:cc:03:00:01');
    await first.close();
    sockets.splice(sockets.indexOf(first), 1);
    await listedOn(b, 'aa:bb:cc:03:00:01', false);

    const refused = await postJson(b, '/devices/aa:bb:cc:03:00:01/say', AGENT_TOKEN, { text: 'Nobody hears this.' });
    expect(refused).toMatchObject({ status: 404, body: { error: { code: 'DEVICE_OFFLINE' } } });

    const expiring = await postJson(b, '/devices/aa:bb:cc:03:00:01/say', AGENT_TOKEN, { text: 'Too late.', hold_s: 1 });
    expect(expiring.body).toMatchObject({ delivered: 'held', push_id: expect.any(String) });
    const held = await getJson(b, `/pushes/${expiring.body.push_id}`, AGENT_TOKEN);
    expect(held.body).toMatchObject({ state: 'held', expires_at: expect.any(String) });
    // Held, the device's owner is known: they see it too.
    expect((await getJson(b, `/pushes/${expiring.body.push_id}`, DEVICE_TOKEN)).status).toBe(200);
    const expired = await receiptOnB(expiring.body.push_id, inState('expired'), 5000);
    expect(expired.history.at(-1)).toMatchObject({ state: 'expired', reason: 'hold_ran_out' });

    const kept = await postJson(b, '/devices/aa:bb:cc:03:00:01/say', AGENT_TOKEN, { text: 'Welcome back.', hold_s: 60 });
    expect(kept.body.delivered).toBe('held');
    const again = await llmDeviceOnA('aa:bb:cc:03:00:01');
    expect(await pushedTexts(again, 1)).toEqual(['Welcome back.']);
    expect(statesOf(await receiptOnB(kept.body.push_id, inState('spoken')))).toEqual(['queued', 'held', 'sent', 'spoken']);
  });

  it('ends every reminder with a receipt: spoken at the next connection when it says so, expired when it does not', async () => {
    const first = await llmDeviceOnA('aa:bb:cc:04:00:01');
    await first.close();
    sockets.splice(sockets.indexOf(first), 1);
    await listedOn(b, 'aa:bb:cc:04:00:01', false);
    const agent = await agentOnB();
    const set = async (args: Record<string, unknown>) => {
      const result = await agent.callTool({ name: 'set_reminder', arguments: { device_id: 'aa:bb:cc:04:00:01', in_s: 0.5, ...args } });
      expect(result.isError).toBeFalsy();
      return result.structuredContent as any;
    };
    const missed = await set({ text: 'Only if you are there.', deliver_when_online: false });
    const waiting = await set({ text: 'Whenever you are back.' });
    expect(missed).toMatchObject({ push_id: `reminder-${missed.id}`, deliver_when_online: false });
    expect(waiting).toMatchObject({ push_id: `reminder-${waiting.id}`, deliver_when_online: true });

    const expired = await receiptOnB(missed.push_id, inState('expired'));
    expect(expired).toMatchObject({ kind: 'reminder', reminder_id: missed.id });
    expect(expired.history.at(-1).reason).toBe('DEVICE_OFFLINE');
    await receiptOnB(waiting.push_id, inState('held'));

    const socket = await llmDeviceOnA('aa:bb:cc:04:00:01');
    expect(await pushedTexts(socket, 1)).toEqual(['Whenever you are back.']);
    const spoken = await receiptOnB(waiting.push_id, inState('spoken'));
    expect(statesOf(spoken)).toEqual(['queued', 'held', 'sent', 'spoken']);
  });

  it('refuses a push the caller may not make, and a bad one, without a receipt anyone else can read', async () => {
    await llmDeviceOnA('aa:bb:cc:05:00:01');
    const stranger = await postJson(b, '/devices/say', STRANGER_TOKEN, { devices: ['aa:bb:cc:05:00:01'], text: 'Hello.' });
    const [result] = stranger.body.results;
    expect(result).toMatchObject({ error: { code: 'DEVICE_OFFLINE' }, push_id: expect.any(String) });
    expect((await getJson(b, `/pushes/${result.push_id}`, STRANGER_TOKEN)).body).toMatchObject({ state: 'refused' });
    // The device's owner does not see a stranger's refused push (its owner was never revealed to it).
    expect((await getJson(b, `/pushes/${result.push_id}`, DEVICE_TOKEN)).status).toBe(404);
    const bad = await postJson(b, '/devices/aa:bb:cc:05:00:01/say', AGENT_TOKEN, { text: '' });
    expect(bad.status).toBe(400);
  });
});

/**
 * Webhooks that hang or fail never slow a push: three gateways in memory, each with an
 * LLM-gateway device, one without a webhook, one whose webhook never answers, one whose webhook
 * always fails.
 */
describe('push receipts with webhooks that hang or fail', () => {
  const TOKEN = 'receipts-hook-secret';
  let hanging: Server;
  let failing: Server;
  let hangingHits = 0;
  const failingHits: string[] = [];
  const gateways: RunningGateway[] = [];
  const sockets: TestSocket[] = [];

  beforeAll(async () => {
    hanging = createServer(() => (hangingHits += 1));
    failing = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => (body += chunk));
      request.on('end', () => {
        failingHits.push(JSON.parse(body).state);
        response.writeHead(503).end();
      });
    });
    await Promise.all([hanging, failing].map((server) => new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))));
    const urlOf = (server: Server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    const settings = { AUTH_TOKENS: TOKEN };
    gateways.push(
      await startGateway(settings),
      await startGateway({ ...settings, PUSH_WEBHOOK_URL: urlOf(hanging), PUSH_WEBHOOK_TIMEOUT: 30, PUSH_WEBHOOK_RETRIES: 3 }),
      await startGateway({ ...settings, PUSH_WEBHOOK_URL: urlOf(failing), PUSH_WEBHOOK_RETRIES: 2, PUSH_WEBHOOK_RETRY_DELAY: 0.05 }),
    );
    for (const gateway of gateways) sockets.push(await connectDevice(gateway, 'speaker', TOKEN));
  });

  afterAll(async () => {
    await Promise.all(sockets.map((socket) => socket.close()));
    await Promise.all(gateways.map((gateway) => gateway.close()));
    await Promise.all([hanging, failing].map(closeServer));
  });

  /** The median time of `count` pushes on `gateway` until each receipt is spoken. */
  const medianPushMs = async (gateway: RunningGateway, socket: TestSocket, count: number): Promise<number> => {
    const times: number[] = [];
    for (let index = 0; index < count; index++) {
      const started = performance.now();
      const said = await postJson(gateway, '/devices/speaker/say', TOKEN, { text: `Number ${index}.` });
      expect(said.status).toBe(200);
      await pushedTexts(socket, 1);
      await eventually(async () => (await getJson(gateway, `/pushes/${said.body.push_id}`, TOKEN)).body.state === 'spoken', 5000, 'spoken');
      times.push(performance.now() - started);
    }
    return times.sort((x, y) => x - y)[Math.floor(count / 2)];
  };

  it('speaks as fast with a hanging webhook as with none, while the hook waits for its answers', async () => {
    const [none, hangs] = [gateways[0], gateways[1]];
    await medianPushMs(none, sockets[0], 2); // warm up both
    await medianPushMs(hangs, sockets[1], 2);
    const withoutHook = await medianPushMs(none, sockets[0], 9);
    const withHangingHook = await medianPushMs(hangs, sockets[1], 9);
    // Eleven pushes, three changes each: the hook was called, and has answered none.
    expect(hangingHits).toBeGreaterThan(0);
    expect(withHangingHook).toBeLessThan(withoutHook * 2 + 50);
  });

  it('tries a failing webhook a bounded number of times per change, and the push is spoken all the same', async () => {
    const gateway = gateways[2];
    const said = await postJson(gateway, '/devices/speaker/say', TOKEN, { text: 'Hello.' });
    await pushedTexts(sockets[2], 1);
    await eventually(async () => (await getJson(gateway, `/pushes/${said.body.push_id}`, TOKEN)).body.state === 'spoken', 2000, 'spoken');
    // Three changes (queued, sent, spoken), each tried 1 + 2 times, then given up.
    await eventually(() => failingHits.length === 9, 5000, 'every attempt');
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(failingHits).toHaveLength(9);
    expect(failingHits.filter((state) => state === 'spoken')).toHaveLength(3);
  });
});
