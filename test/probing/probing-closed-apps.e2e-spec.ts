import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LiteMcpClient } from '../support/litemcp-client';
import { startLlmStack } from '../support/llm-stack';
import { collectGarbage, eventually } from '../support/probing';
import { inspector, removeKeys, TEST_REDIS_URL, uniquePrefix } from '../support/redis';

const TOKEN = 'closed-apps-token';
const APPS = 3;

/**
 * A process that boots gateways and closes them (tests, a host app that embeds one, a reload)
 * must get each one's memory back: nothing process-wide may keep a closed app reachable. Each app
 * here serves a device turn with a tool call, an MCP session, a LiteMCP call and a metrics
 * scrape before it closes; with sessions in memory, then in Redis.
 */
describe('probing: a closed gateway leaves nothing of itself in its process', () => {
  const prefix = uniquePrefix();
  afterAll(async () => {
    const redis = await inspector();
    await removeKeys(redis, prefix);
    redis.disconnect();
  });

  async function bootUseAndClose(redisUrl: string): Promise<WeakRef<object>> {
    const stack = await startLlmStack({ AUTH_TOKENS: TOKEN, REDIS_URL: redisUrl, REDIS_KEY_PREFIX: prefix });
    stack.llm.reply({ toolCalls: [{ name: 'calculator', arguments: { operation: 'add', a: 2, b: 3 } }] }, { text: 'Five.' });
    const device = await stack.connect('/', { Authorization: `Bearer ${TOKEN}` });
    device.send({ type: 'text_input', text: 'two plus three?' });
    await device.until('llm_response');
    await device.close();

    const mcp = new Client({ name: 'closed-apps', version: '1.0.0' });
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(stack.gateway.http('/mcp')), { requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } } }),
    );
    expect((await mcp.callTool({ name: 'calculator', arguments: { operation: 'add', a: 1, b: 1 } })).isError).toBeFalsy();
    await mcp.close();

    const lite = await LiteMcpClient.connect(stack.gateway.ws('/litemcp/calculator'), TOKEN);
    expect((await lite.call('calculator', ['2', '2'])).response.error).toBeFalsy();
    lite.close();

    expect(await (await fetch(stack.gateway.http('/metrics'), { headers: { Authorization: `Bearer ${TOKEN}` } })).text()).toMatch(/^gateway_tool_calls_total/m);
    const app = new WeakRef<object>(stack.gateway.app);
    await stack.close();
    return app;
  }

  it.each([
    ['in memory', ''],
    ['in Redis', TEST_REDIS_URL],
  ])(
    `lets ${APPS} closed apps with their sessions %s be collected`,
    async (_where, redisUrl) => {
      const apps: WeakRef<object>[] = [];
      for (let index = 0; index < APPS; index++) apps.push(await bootUseAndClose(redisUrl));
      await eventually(
        () => {
          collectGarbage();
          return apps.every((app) => app.deref() === undefined);
        },
        'every closed app to be collected',
        10_000,
      );
    },
    60_000,
  );
});
