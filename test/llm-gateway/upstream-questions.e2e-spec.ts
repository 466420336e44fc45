import { CreateMessageResultSchema, ElicitResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { HttpUpstream, text, UpstreamTool } from '../support/http-upstream';
import { LlmStack, startLlmStack } from '../support/llm-stack';
import { toolResults } from '../support/scripted-llm';
import { serversFile, upstreamIn } from '../support/upstreams';

const UPSTREAM_TOKEN = 'upstream-token-of-the-question-tests';
const objectSchema = { type: 'object' as const, properties: {} };

/** An upstream whose tools ask the caller: the user (elicitation) or the caller's model (sampling). */
const ASKING_TOOLS: UpstreamTool[] = [
  {
    tool: { name: 'book_table', description: 'Books a table, asking for how many people', inputSchema: objectSchema },
    run: async (_args, _meta, extra) => {
      const answer = await extra!.sendRequest(
        {
          method: 'elicitation/create',
          params: { message: 'For how many people?', requestedSchema: { type: 'object', properties: { people: { type: 'integer' } }, required: ['people'] } },
        },
        ElicitResultSchema,
      );
      return text(answer.action === 'accept' ? `Booked for ${answer.content?.people}` : `Not booked (${answer.action})`);
    },
  },
  {
    tool: { name: 'fill_form', description: 'Asks for two fields at once', inputSchema: objectSchema },
    run: async (_args, _meta, extra) => {
      try {
        await extra!.sendRequest(
          {
            method: 'elicitation/create',
            params: { message: 'Name and email?', requestedSchema: { type: 'object', properties: { name: { type: 'string' }, email: { type: 'string' } } } },
          },
          ElicitResultSchema,
        );
        return text('answered');
      } catch (error) {
        return { content: [{ type: 'text', text: (error as Error).message }], isError: true };
      }
    },
  },
  {
    tool: { name: 'headline', description: "Asks the caller's model for a headline", inputSchema: objectSchema },
    run: async (_args, _meta, extra) => {
      const answer = await extra!.sendRequest(
        {
          method: 'sampling/createMessage',
          params: { messages: [{ role: 'user', content: { type: 'text', text: 'A headline for: rain tomorrow' } }], systemPrompt: 'Be brief.', maxTokens: 30 },
        },
        CreateMessageResultSchema,
      );
      return text(`headline: ${answer.content.type === 'text' ? answer.content.text : '?'} (${answer.model})`);
    },
  },
];

/**
 * An upstream MCP server's requests while the model of a voice turn calls its tool: sampling is
 * answered by the gateway's own model; elicitation is said to the user, whose next `text_input`
 * answers it; what cannot be asked aloud is refused with the reason.
 */
describe('Upstream sampling and elicitation in LLM-gateway turns', () => {
  let stack: LlmStack;
  let upstream: HttpUpstream;
  let servers: ReturnType<typeof serversFile>;

  beforeAll(async () => {
    upstream = await HttpUpstream.start(UPSTREAM_TOKEN, ASKING_TOOLS);
    servers = serversFile({ shop: { url: upstream.url(), headers: { Authorization: `Bearer ${UPSTREAM_TOKEN}` } } });
    stack = await startLlmStack({ MCP_SERVERS_FILE: servers.path, LLM_STREAM_DEFAULT: true, TOOL_FILLER_DELAY: 0 });
    await upstreamIn(stack.gateway, 'shop', 'connected');
  }, 60_000);

  afterAll(async () => {
    await stack?.close();
    await upstream?.kill();
    servers?.remove();
  });

  beforeEach(() => stack.llm.reset());

  it("says an upstream's question to the user and takes their next text_input as the answer", async () => {
    stack.llm.reply({ toolCalls: [{ id: 'b', name: 'shop.book_table', arguments: {} }] }, (request) => ({ text: `Done: ${toolResults(request).b}.` }));
    const client = await stack.connect();
    client.send({ type: 'text_input', text: 'Book a table tonight' });
    const asked = await client.until('llm_response');
    expect(asked.at(-1)).toMatchObject({ is_final: false, content: 'For how many people?' });
    client.send({ type: 'text_input', text: 'We are four, I think 4' });
    const rest = await client.until('status', 'idle');
    const final = rest.find((frame: any) => frame.type === 'llm_response' && frame.is_final);
    expect(final.content).toContain('Booked for 4');
    // The answer was no turn of its own: the model was asked twice (the call, then the answer), not three times.
    expect(stack.llm.requests).toHaveLength(2);
    client.close();
  });

  it("answers an upstream's sampling request with the gateway's own model", async () => {
    stack.llm.reply({ toolCalls: [{ id: 'h', name: 'shop.headline', arguments: {} }] }, { text: 'Rain ahead' }, (request) => ({
      text: `Here: ${toolResults(request).h}`,
    }));
    const client = await stack.connect();
    client.send({ type: 'text_input', text: 'Give me a headline' });
    const frames = await client.until('status', 'idle');
    const answer = frames
      .filter((frame: any) => frame.type === 'llm_response')
      .map((frame: any) => frame.content)
      .join(' ');
    expect(answer).toContain('headline: Rain ahead');
    const sampling = stack.llm.requests[1];
    expect(sampling.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'A headline for: rain tomorrow' },
    ]);
    expect(sampling.tools ?? []).toEqual([]);
    client.close();
  });

  it('refuses, with the reason, a question that cannot be answered aloud', async () => {
    stack.llm.reply({ toolCalls: [{ id: 'f', name: 'shop.fill_form', arguments: {} }] }, (request) => ({ text: JSON.stringify(toolResults(request).f) }));
    const client = await stack.connect();
    client.send({ type: 'text_input', text: 'Fill the form' });
    const frames = await client.until('status', 'idle');
    expect(JSON.stringify(frames)).toContain('asks for 2 fields at once');
    client.close();
  });

  it('refuses a question in a session whose answers are not streamed', async () => {
    stack.llm.reply({ toolCalls: [{ id: 'b', name: 'shop.book_table', arguments: {} }] }, (request) => ({ text: JSON.stringify(toolResults(request).b) }));
    const client = await stack.connect();
    client.send({ type: 'configure', stream: false });
    client.send({ type: 'text_input', text: 'Book a table' });
    const frames = await client.until('status', 'idle');
    expect(JSON.stringify(frames)).toContain('its answers are not streamed');
    client.close();
  });
});
