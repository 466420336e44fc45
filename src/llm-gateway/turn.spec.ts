import { Test, TestingModule } from '@nestjs/testing';
import { lastValueFrom, toArray } from 'rxjs';
import { ScriptedLlm } from '../../test/support/scripted-llm';
import { SessionService } from '../assistant/session/session.service';
import { ANONYMOUS_PRINCIPAL } from '../core/auth/access-token.service';
import { ToolRegistryService } from '../core/tools/tool-registry.service';
import { GatewayModule } from '../gateway.module';
import type { LlmConnection } from './llm-connection';
import { LlmConnectionState } from './llm-connection';
import { SessionBindingService } from './session-binding.service';
import { Turn } from './turn';
import { TurnEnvironment } from './turn-environment';

/**
 * A turn on its own: the gateway's services as the app makes them, a scripted model on a real
 * port, and a connection that is no socket (the turn only sends through its own stream of
 * frames), so the story a turn tells can be read frame by frame.
 */
describe('Turn', () => {
  let llm: ScriptedLlm;
  let moduleRef: TestingModule;
  let environment: TurnEnvironment;

  beforeAll(async () => {
    llm = await ScriptedLlm.start();
    moduleRef = await Test.createTestingModule({
      imports: [
        GatewayModule.forRoot({
          settings: { LLM_BASE_URL: llm.baseUrl, LLM_MAX_RETRIES: 0, LLM_TIMEOUT: 2, CLOUD_LOG_LEVEL: 'ERROR', MCP_WS_PORT: 0, DEFAULT_TIMEZONE: 'UTC' },
        }),
      ],
    }).compile();
    await moduleRef.init();
    environment = moduleRef.get(TurnEnvironment);
  });
  afterAll(async () => {
    await moduleRef.close();
    await llm.close();
  });
  beforeEach(() => llm.reset());

  /** A connection with a session, as `status connected` leaves it. */
  async function connection(stream = false): Promise<LlmConnection> {
    const closeHooks: (() => void)[] = [];
    const fake = {
      id: `conn-${Math.random()}`,
      protocol: 'llm',
      principal: ANONYMOUS_PRINCIPAL,
      state: new LlmConnectionState(stream),
      onClose: (hook: () => void) => (closeHooks.push(hook), () => undefined),
      send: () => true,
    } as unknown as LlmConnection;
    await moduleRef.get(SessionBindingService).open(fake);
    return fake;
  }

  async function play(turn: Turn) {
    const frames = lastValueFrom(turn.frames.pipe(toArray()));
    await turn.play();
    return frames;
  }

  it('tells its story in order: processing, the answer with its timing, idle; and keeps the exchange', async () => {
    const conn = await connection();
    const turn = new Turn('t1', conn, { type: 'text_input', text: ' Hello ' }, environment);
    conn.state.turns.set('t1', turn);
    const frames = await play(turn);
    expect(frames.map((frame) => [frame.type, (frame as { status?: string }).status ?? ''])).toEqual([
      ['status', 'processing'],
      ['llm_response', ''],
      ['status', 'idle'],
    ]);
    expect(frames.every((frame) => (frame as { turn_id?: string }).turn_id === 't1')).toBe(true);
    expect(frames[1]).toMatchObject({ content: 'You said: Hello', is_final: true, timing: { total_ms: expect.any(Number), llm_ms: expect.any(Number) } });
    expect(conn.state.turns.has('t1')).toBe(false);
    const session = await moduleRef.get(SessionService).require(conn.state.sessionId);
    expect(session.history).toEqual([
      { role: 'user', content: 'Hello' },
      { role: 'assistant', content: 'You said: Hello' },
    ]);
  });

  it('says each sentence as a partial while it streams; the final answer is what was said', async () => {
    const conn = await connection(true);
    llm.reply({ text: 'First sentence here. Second one follows.' });
    const frames = await play(new Turn('t2', conn, { type: 'text_input', text: 'go' }, environment));
    const responses = frames.filter((frame) => frame.type === 'llm_response') as { content: string; is_final: boolean; seq?: number }[];
    expect(responses.map(({ content, is_final, seq }) => [content, is_final, seq])).toEqual([
      ['First sentence here.', false, 0],
      [' Second one follows.', false, 1],
      ['First sentence here. Second one follows.', true, undefined],
    ]);
  });

  it('runs a tool round the model asks for, announces the server tool, and answers with what it returned', async () => {
    const conn = await connection();
    moduleRef.get(ToolRegistryService).register({
      name: 'spec_lookup',
      description: 'x',
      inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
      source: 'module',
      handler: (args) => ({ found: args.q }),
    });
    llm.reply({ toolCalls: [{ id: 'k', name: 'spec_lookup', arguments: { q: 'blue' } }] }, { text: 'It is blue.' });
    const frames = await play(new Turn('t3', conn, { type: 'text_input', text: 'colour?' }, environment));
    expect(frames.find((frame) => frame.type === 'tool_call')).toMatchObject({
      tool_name: 'spec_lookup',
      arguments: { q: 'blue' },
      result: { found: 'blue' },
      success: true,
    });
    expect(frames.find((frame) => frame.type === 'llm_response')).toMatchObject({
      content: 'It is blue.',
      tool_calls: [{ call_id: 'k', name: 'spec_lookup', location: 'server', success: true }],
    });
    expect(llm.requests[1].messages.at(-1)).toEqual({ role: 'tool', tool_call_id: 'k', content: '{"found":"blue"}' });
  });

  it('ends with cancelled then idle when cancelled before it starts, and never asks the model', async () => {
    const conn = await connection();
    const turn = new Turn('t4', conn, { type: 'text_input', text: 'never mind' }, environment);
    turn.cancel();
    const frames = await play(turn);
    expect(frames.map((frame) => (frame as { status?: string }).status)).toEqual(['cancelled', 'idle']);
    expect(llm.requests).toHaveLength(0);
  });

  it("answers the model server's failure with an error frame, then idle", async () => {
    const conn = await connection();
    llm.reply({ fault: 'http500' });
    const frames = await play(new Turn('t5', conn, { type: 'text_input', text: 'hi' }, environment));
    expect(frames.map((frame) => frame.type)).toEqual(['status', 'error', 'status']);
    expect(frames[1]).toMatchObject({ code: 'LLM_ERROR', details: 'The model server answered HTTP 500' });
  });
});
