import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type Redis from 'ioredis';
import { connectDevice, deviceRefusal, eventually, getJson, mcpAgent, postJson, pushedTexts } from '../support/fleet-client';
import { LlmStack, startLlmStack } from '../support/llm-stack';
import { inspector, removeKeys, TEST_REDIS_URL, uniquePrefix } from '../support/redis';
import type { TestSocket } from '../support/test-socket';

const OWNER = 'owner-secret-a';
const STRANGER = 'stranger-secret-b';

const text = (result: any): string => (result.content as { text: string }[]).map((block) => block.text).join('');

/**
 * Who a device id belongs to once its device is offline (hardening III): the audit's steps, in
 * memory and with Redis. Principal A's `kitchen-speaker` connects once and goes offline; A holds
 * a push for it and sets a reminder; principal B must get none of it.
 */
describe.each([
  ['in memory', false],
  ['with Redis', true],
])('device ownership %s', (_mode, withRedis) => {
  const prefix = uniquePrefix();
  let redis: Redis | undefined;
  let stack: LlmStack;
  const open: { close(): unknown }[] = [];
  const track = <T extends { close(): unknown }>(item: T): T => (open.push(item), item);

  const say = (id: string, token: string, body: Record<string, unknown>) => postJson(stack.gateway, `/devices/${id}/say`, token, body);
  const offline = (id: string) => eventually(async () => (await getJson(stack.gateway, `/devices/${id}`, OWNER)).status === 404, 5000, `${id} offline`);
  /** A device of A's that connected once and left. */
  const owned = async (id: string, token = OWNER) => {
    await (await connectDevice(stack.gateway, id, token)).close();
    await offline(id);
  };
  const agent = async (token: string): Promise<Client> => track(await mcpAgent(stack.gateway, token));

  beforeAll(async () => {
    if (withRedis) redis = await inspector();
    stack = await startLlmStack({
      AUTH_TOKENS: `${OWNER},${STRANGER}`,
      FLEET_HOLD_MAX_COUNT: 16,
      FLEET_HOLD_MAX_PER_PRINCIPAL: 20,
      FLEET_REMINDER_HOLD_S: 60,
      ...(withRedis && { REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: prefix }),
    });
  });

  afterEach(async () => {
    await Promise.all(open.splice(0).map((item) => item.close()));
  });

  afterAll(async () => {
    await stack.close();
    if (redis) {
      await removeKeys(redis, prefix);
      redis.disconnect();
    }
  });

  it("keeps an offline device's id, held pushes and reminders from another principal, and delivers them to the owner", async () => {
    await owned('kitchen-speaker');
    expect(await say('kitchen-speaker', OWNER, { text: 'The door code is 4711.', hold_s: 60 })).toMatchObject({ status: 200, body: { delivered: 'held' } });
    const a = await agent(OWNER);
    const set = await a.callTool({ name: 'set_reminder', arguments: { device_id: 'kitchen-speaker', in_s: 1, text: 'Take the pizza out.' } });
    expect(set.isError).toBeFalsy();
    const reminderId = (set.structuredContent as { id: string }).id;

    // B may not connect as the id, see, list, cancel or push to anything of it.
    expect(await deviceRefusal(stack.gateway, 'kitchen-speaker', STRANGER)).toBe(409);
    const b = await agent(STRANGER);
    const listed = await b.callTool({ name: 'list_reminders', arguments: { device_id: 'kitchen-speaker' } });
    expect(listed.isError).toBe(true);
    expect(text(listed)).toMatch(/Unknown device/);
    const cancelled = await b.callTool({ name: 'cancel_reminder', arguments: { id: reminderId } });
    expect(cancelled.isError).toBe(true);
    expect(await say('kitchen-speaker', STRANGER, { text: 'Spam.', hold_s: 60 })).toMatchObject({ status: 404, body: { error: { code: 'DEVICE_OFFLINE' } } });

    // A still holds pushes for its own device, and hears everything when it comes back.
    expect(await say('kitchen-speaker', OWNER, { text: 'Back soon.', hold_s: 60 })).toMatchObject({ status: 200, body: { delivered: 'held' } });
    const stillListed = await a.callTool({ name: 'list_reminders', arguments: { device_id: 'kitchen-speaker' } });
    expect((stillListed.structuredContent as { reminders: unknown[] }).reminders).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 1500)); // the reminder falls due while the device is away
    const back = track(await connectDevice(stack.gateway, 'kitchen-speaker', OWNER));
    expect(await pushedTexts(back, 3)).toEqual(['The door code is 4711.', 'Back soon.', 'Take the pizza out.']);
  });

  it('gives one owner to two principals connecting one fresh id at the same moment', async () => {
    for (let trial = 0; trial < 10; trial++) {
      const id = `fresh-${trial}`;
      const outcomes = await Promise.all([deviceRefusal(stack.gateway, id, OWNER), deviceRefusal(stack.gateway, id, STRANGER)]);
      expect(outcomes.filter((status) => status === undefined)).toHaveLength(1);
      expect(outcomes.filter((status) => status === 409)).toHaveLength(1);
    }
  });

  it('delivers every held push at the next connection, in order, past the bound of the turn queue', async () => {
    await owned('held-16');
    const texts = Array.from({ length: 16 }, (_, index) => `Held ${index + 1}.`);
    for (const held of texts) expect(await say('held-16', OWNER, { text: held, hold_s: 60 })).toMatchObject({ status: 200, body: { delivered: 'held' } });
    const back = track(await connectDevice(stack.gateway, 'held-16', OWNER));
    expect(await pushedTexts(back, 16)).toEqual(texts);
    expect(await back.next()).toMatchObject({ type: 'status', status: 'idle', origin: 'push' });
    await back.expectSilence(300);
  });

  it('bounds holding per principal, so one principal cannot refuse another, and says what is full', async () => {
    await owned('cap-a1');
    await owned('cap-a2');
    await owned('cap-b1', STRANGER);
    for (let index = 0; index < 16; index++) await say('cap-a1', OWNER, { text: `a1 ${index}`, hold_s: 60 });
    expect(await say('cap-a1', OWNER, { text: 'One more.', hold_s: 60 })).toMatchObject({
      status: 429,
      body: { error: { code: 'DEVICE_BUSY', message: expect.stringContaining('FLEET_HOLD_MAX_COUNT') } },
    });
    for (let index = 0; index < 4; index++) expect((await say('cap-a2', OWNER, { text: `a2 ${index}`, hold_s: 60 })).status).toBe(200);
    expect(await say('cap-a2', OWNER, { text: 'Over.', hold_s: 60 })).toMatchObject({
      status: 429,
      body: { error: { code: 'RATE_LIMITED', message: expect.stringContaining('FLEET_HOLD_MAX_PER_PRINCIPAL') } },
    });
    // B's own hold is untouched by A's.
    expect(await say('cap-b1', STRANGER, { text: 'Mine.', hold_s: 60 })).toMatchObject({ status: 200, body: { delivered: 'held' } });
    // Delivered pushes free A's count.
    const a1 = track(await connectDevice(stack.gateway, 'cap-a1', OWNER));
    await pushedTexts(a1, 16);
    expect((await say('cap-a2', OWNER, { text: 'Room again.', hold_s: 60 })).status).toBe(200);
  });

  it('lets the owner release an offline id: what was held and pending goes, and another principal may take it', async () => {
    await owned('sold-1');
    await say('sold-1', OWNER, { text: 'Private.', hold_s: 60 });
    const a = await agent(OWNER);
    expect((await a.callTool({ name: 'set_reminder', arguments: { device_id: 'sold-1', in_s: 1, text: 'Private reminder.' } })).isError).toBeFalsy();
    expect(await postJson(stack.gateway, '/devices/sold-1/release', STRANGER, {})).toMatchObject({ status: 404, body: { error: { code: 'NOT_FOUND' } } });
    expect(await postJson(stack.gateway, '/devices/sold-1/release', OWNER, {})).toEqual({
      status: 200,
      body: { device: 'sold-1', released: true, held_dropped: 1 },
    });
    const taken: TestSocket = track(await connectDevice(stack.gateway, 'sold-1', STRANGER));
    await taken.expectSilence(1800); // neither the held push nor the reminder reaches the new owner
    expect(await deviceRefusal(stack.gateway, 'sold-1', OWNER)).toBe(409);

    // An online device is not released; the tool says so too.
    const b = await agent(STRANGER);
    const online = await b.callTool({ name: 'release_device', arguments: { device_id: 'sold-1' } });
    expect(online.isError).toBe(true);
    expect(text(online)).toMatch(/connected/);
  });
});

describe('device ownership lapses', () => {
  let stack: LlmStack;

  beforeAll(async () => {
    stack = await startLlmStack({ AUTH_TOKENS: `${OWNER},${STRANGER}`, FLEET_OWNERSHIP_LAPSE_S: 1 });
  });
  afterAll(() => stack.close());

  it('after its setting, with nothing pending, and not while a push is held for the device', async () => {
    for (const id of ['lapsing-1', 'pending-1']) await (await connectDevice(stack.gateway, id, OWNER)).close();
    await eventually(async () => (await getJson(stack.gateway, '/devices/pending-1', OWNER)).status === 404);
    expect(await postJson(stack.gateway, '/devices/pending-1/say', OWNER, { text: 'Wait for me.', hold_s: 30 })).toMatchObject({ status: 200 });
    expect(await deviceRefusal(stack.gateway, 'lapsing-1', STRANGER)).toBe(409);
    await new Promise((resolve) => setTimeout(resolve, 1300));
    expect(await deviceRefusal(stack.gateway, 'lapsing-1', STRANGER)).toBeUndefined();
    expect(await deviceRefusal(stack.gateway, 'pending-1', STRANGER)).toBe(409);
  });
});
