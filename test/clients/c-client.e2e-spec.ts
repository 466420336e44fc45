import { spawn } from 'child_process';
import { mkdtempSync, readFileSync, rmSync } from 'fs';
import { AddressInfo, createConnection, createServer as createTcpServer } from 'net';
import { tmpdir } from 'os';
import { join } from 'path';
import { createServer as createTlsServer, Server as TlsServer } from 'tls';
import { WebSocketServer } from 'ws';
import { PROJECT_ROOT } from '../support/built';
import { LlmStack, startLlmStack } from '../support/llm-stack';
import { toolResults } from '../support/scripted-llm';
import { SPEC_BATTERY_TOOL, SPEC_VOLUME_TOOL } from '../support/spec-clients';

/**
 * The C client (clients/c, issue 15): configured and built with CMake by gcc and by clang, each
 * in Debug and in Release (warnings are errors, and each compiler warns differently at each
 * optimisation level), its ctest suite run in each (unit tests over a fake transport, the same
 * under ASan+UBSan and valgrind; the fuzz target in the clang builds, which build it), then
 * llm_device_example driven against the real gateway and the scripted model: device tools, the
 * printed answer, a resumed session, wss://, auth and failures. Missing build tools fail the
 * suite with what to install; they never skip it.
 */

const CLIENT_DIR = join(PROJECT_ROOT, 'clients', 'c');
/** Each build's own directory, removed afterwards: the source tree is left as it was. */
const BUILD_ROOT = mkdtempSync(join(tmpdir(), 'c-client-'));

interface Build {
  compiler: 'gcc' | 'clang';
  type: 'Debug' | 'Release';
  dir: string;
  /** clang builds the libFuzzer target itself; a gcc build's fuzz_frame test would only rebuild it with clang. */
  fuzz: boolean;
}

const BUILDS: Build[] = (['gcc', 'clang'] as const).flatMap((compiler) =>
  (['Debug', 'Release'] as const).map((type) => ({ compiler, type, dir: join(BUILD_ROOT, `${compiler}-${type}`), fuzz: compiler === 'clang' })),
);
/** Two fuzz runs of 10 s, at -O0 and -O2, as long as the single 20 s run this suite had. */
const FUZZ_SECONDS = 10;
/** The integration tests drive Debian's default compiler's Debug build: ASan reports come with lines. */
const EXAMPLE_BUILD = BUILDS.find((build) => build.compiler === 'gcc' && build.type === 'Debug')!;
const EXAMPLE = join(EXAMPLE_BUILD.dir, 'llm_device_example');
/** The same program built with ASan and UBSan, transport included. */
const EXAMPLE_SANITIZED = join(EXAMPLE_BUILD.dir, 'llm_device_example_sanitized');
/** Sanitizer reports exit with this code, distinct from the example's own. */
const SANITIZER_EXIT = 86;
const TLS_DIR = join(CLIENT_DIR, 'tests', 'tls');
const INSTALL = 'apt-get install gcc make cmake clang libclang-rt-dev libwebsockets-dev libcjson-dev valgrind';
const TOKEN = 'device-token-15';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Killed for running past its time limit. */
  killed: boolean;
  /** Could not be started at all (not installed). */
  missing: boolean;
}

function run(command: string, args: string[], timeoutMs: number, input?: string, cwd = CLIENT_DIR): Promise<Run> {
  return new Promise((resolve) => {
    const env = {
      ...process.env,
      ASAN_OPTIONS: `detect_leaks=1:exitcode=${SANITIZER_EXIT}`,
      UBSAN_OPTIONS: `halt_on_error=1:print_stacktrace=1:exitcode=${SANITIZER_EXIT}`,
    };
    const child = spawn(command, args, { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let killed = false;
    const timer = setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve({ code: null, stdout, stderr: stderr + error.message, killed, missing: error.code === 'ENOENT' });
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, killed, missing: false });
    });
    // A program may exit before reading its input (EPIPE): its exit code tells what happened.
    child.stdin.once('error', () => undefined);
    child.stdin.end(input ?? '');
  });
}

/** llm_device_example, bounded: its own --timeout plus a margin the test enforces. */
function device(...args: string[]): Promise<Run> {
  return run(EXAMPLE, args, 20_000);
}

/** The sanitizer build, which must behave the same and report nothing. */
async function sanitizedDevice(...args: string[]): Promise<Run> {
  const result = await run(EXAMPLE_SANITIZED, args, 30_000);
  expect(result.stderr).not.toMatch(/AddressSanitizer|LeakSanitizer|runtime error:/);
  expect(result.code).not.toBe(SANITIZER_EXIT);
  return result;
}

function lines(text: string): string[] {
  return text.split('\n').filter((line) => line !== '');
}

/** What the C build needs, checked first so a missing piece fails in one line. */
async function missingPrerequisites(): Promise<string[]> {
  const missing: string[] = [];
  for (const program of ['cmake', 'make', 'gcc', 'clang', 'valgrind']) {
    if ((await run(program, ['--version'], 10_000)).missing) missing.push(program);
  }
  if (missing.includes('gcc')) return missing;
  for (const [header, name] of [
    ['libwebsockets.h', 'libwebsockets'],
    ['cjson/cJSON.h', 'cJSON'],
  ]) {
    const check = await run('gcc', ['-E', '-x', 'c', '-'], 10_000, `#include <${header}>\n`);
    if (check.code !== 0) missing.push(name);
  }
  return missing;
}

describe('C client (clients/c)', () => {
  let stack: LlmStack;

  beforeAll(async () => {
    const missing = await missingPrerequisites();
    if (missing.length > 0) throw new Error(`The C client needs ${missing.join(', ')}: ${INSTALL}`);
    // One at a time, each on both cores; every build is tried, and each failure shows its compiler's words.
    const failures: string[] = [];
    for (const { compiler, type, dir } of BUILDS) {
      const options = [`-DCMAKE_C_COMPILER=${compiler}`, `-DCMAKE_BUILD_TYPE=${type}`, `-DLLM_FUZZ_SECONDS=${FUZZ_SECONDS}`];
      const configure = await run('cmake', ['-S', '.', '-B', dir, ...options], 60_000);
      if (configure.code !== 0) {
        failures.push(`cmake configure (${compiler} ${type}) failed (${INSTALL}):\n${configure.stdout}${configure.stderr}`);
        continue;
      }
      const build = await run('cmake', ['--build', dir, '-j', '2'], 120_000);
      if (build.code !== 0) failures.push(`cmake --build (${compiler} ${type}) failed:\n${build.stdout}${build.stderr}`);
    }
    if (failures.length > 0) throw new Error(failures.join('\n\n'));
    stack = await startLlmStack({ AUTH_TOKENS: TOKEN });
  }, 600_000);
  afterAll(async () => {
    await stack?.close();
    rmSync(BUILD_ROOT, { recursive: true, force: true });
  });
  beforeEach(() => stack?.llm.reset());

  it.each(BUILDS)(
    'passes its ctest suite built by $compiler in $type: unit tests, sanitizers, valgrind (and the fuzz run with clang)',
    async ({ dir, fuzz }) => {
      const ctest = await run('ctest', ['--output-on-failure', '-j', '2', ...(fuzz ? [] : ['-E', '^fuzz_frame$'])], 110_000, undefined, dir);
      expect(ctest.killed).toBe(false);
      if (ctest.code !== 0) throw new Error(`ctest failed:\n${ctest.stdout}${ctest.stderr}`);
      for (const name of ['unit', 'memory', 'unit_sanitized', 'memory_sanitized', 'unit_valgrind', ...(fuzz ? ['fuzz_frame'] : [])]) {
        expect(ctest.stdout).toMatch(new RegExp(`Test +#\\d+: ${name} \\.+ +Passed`));
      }
      expect(ctest.stdout).toMatch(/100% tests passed/);
    },
    120_000,
  );

  describe('llm_device_example against the gateway', () => {
    let sessionId: string;

    it("registers the spec's device tools, answers get_battery and prints the final answer", async () => {
      stack.llm.reply({ toolCalls: [{ id: 'b1', name: 'get_battery', arguments: {} }] }, (request) => ({
        text: `您的设备电量还剩${toolResults(request).b1.level}%`,
      }));
      const result = await device(stack.gateway.ws('/'), '--token', TOKEN, '--print-session', '--context', '我的电量还剩多少？');
      expect(result).toMatchObject({ code: 0, killed: false });
      const [sessionLine, answer, ...rest] = lines(result.stdout);
      expect(sessionLine).toMatch(/^session_id=[0-9a-f-]{36}$/);
      expect(answer).toBe('您的设备电量还剩百分之85');
      expect(rest).toEqual([]);
      expect(result.stderr).toContain('tool get_battery ran on the device: ok');
      sessionId = sessionLine.slice('session_id='.length);

      const offered = stack.llm.requests[0].tools!.filter((tool) => ['get_battery', 'set_volume'].includes(tool.function.name));
      expect(offered).toEqual([
        { type: 'function', function: { name: 'get_battery', description: SPEC_BATTERY_TOOL.description, parameters: SPEC_BATTERY_TOOL.parameters } },
        { type: 'function', function: { name: 'set_volume', description: SPEC_VOLUME_TOOL.description, parameters: SPEC_VOLUME_TOOL.parameters } },
      ]);
      expect(stack.llm.requests[1].messages.pop()).toEqual({ role: 'tool', tool_call_id: 'b1', content: '{"level":85,"charging":false}' });
    });

    it('reconnects and resumes that session: the model sees the previous exchange', async () => {
      expect(sessionId).toBeDefined();
      stack.llm.reply((request) => ({
        text: `你刚才问的是：${request.messages.find((m) => m.role === 'user')?.content}`,
      }));
      const result = await device(stack.gateway.ws('/'), '--token', TOKEN, '--resume', sessionId, '--print-session', '--context', '我刚才问了什么？');
      expect(result).toMatchObject({ code: 0, killed: false });
      expect(lines(result.stdout)).toEqual([`session_id=${sessionId}`, '你刚才问的是：我的电量还剩多少？']);
      const history = stack.llm.requests[0].messages.filter((m) => m.role !== 'system').map((m) => [m.role, m.content]);
      expect(history).toEqual([
        ['user', '我的电量还剩多少？'],
        ['assistant', '您的设备电量还剩85%'],
        ['user', '我刚才问了什么？'],
      ]);
    });

    it('runs both device tools of one round and feeds back each result', async () => {
      stack.llm.reply(
        {
          toolCalls: [
            { id: 'b', name: 'get_battery', arguments: {} },
            { id: 'v', name: 'set_volume', arguments: { volume: 40 } },
          ],
        },
        (request) => {
          const results = toolResults(request);
          return { text: `电量${results.b.level}%，音量${results.v.volume}` };
        },
      );
      const result = await device(stack.gateway.ws('/'), '--token', TOKEN, '电量多少？顺便把音量调到40');
      expect(result).toMatchObject({ code: 0, killed: false });
      expect(lines(result.stdout)).toEqual(['电量百分之85，音量40']);
      expect(toolResults(stack.llm.requests[1])).toEqual({ b: { level: 85, charging: false }, v: { volume: 40, status: 'set' } });
    });

    it('prints a streamed answer sentence by sentence, and cancels it mid-way: the history keeps what was played', async () => {
      const weather = 'Beijing is sunny today. The high is 25 degrees. A light wind blows from the north. Rain may come on Friday.';
      stack.llm.reply({ text: weather, pace: { firstTokenMs: 50, tokensPerSecond: 40 } });
      const result = await device(
        stack.gateway.ws('/'),
        '--token',
        TOKEN,
        '--print-session',
        '--context',
        '--stream',
        '--cancel-after-partials',
        '2',
        'Weather?',
      );
      expect(result).toMatchObject({ code: 0, killed: false });
      const [sessionLine, ...printed] = lines(result.stdout);
      expect(printed).toEqual(['Beijing is sunny today.', ' The high is 25 degrees.', expect.stringMatching(/^cancelled turn_id=\S+$/)]);
      expect(stack.llm.streams[0].closedEarlyAt).toBeDefined();

      stack.llm.reply((request) => ({ text: String(request.messages.filter((m) => m.role === 'assistant').pop()?.content) }));
      const next = await device(stack.gateway.ws('/'), '--token', TOKEN, '--resume', sessionLine.slice('session_id='.length), 'And now?');
      expect(lines(next.stdout)).toEqual(['Beijing is sunny today. The high is 25 degrees.']);
    });

    it('does the same under ASan and UBSan, over ws:// and wss://, with nothing reported', async () => {
      const proxy = await tlsProxy(stack.gateway.port);
      try {
        for (const url of [stack.gateway.ws('/'), `wss://localhost:${(proxy.address() as AddressInfo).port}/`]) {
          stack.llm.reset();
          stack.llm.reply(
            {
              toolCalls: [
                { id: 'b', name: 'get_battery', arguments: {} },
                { id: 'v', name: 'set_volume', arguments: { volume: 40 } },
              ],
            },
            (request) => ({ text: `电量${toolResults(request).b.level}%` }),
          );
          const result = await sanitizedDevice(url, '--token', TOKEN, '--ca', join(TLS_DIR, 'test-only-localhost.crt'), '电量多少？');
          expect(result).toMatchObject({ code: 0, killed: false });
          expect(lines(result.stdout)).toEqual(['电量百分之85']);
        }
      } finally {
        await new Promise((resolve) => proxy.close(resolve));
      }
    });

    it('connects over wss:// (a TLS proxy in front of the gateway) with the token', async () => {
      const proxy = await tlsProxy(stack.gateway.port);
      try {
        const port = (proxy.address() as AddressInfo).port;
        stack.llm.reply({ text: 'over TLS' });
        const trusted = await device(`wss://localhost:${port}/`, '--token', TOKEN, '--ca', join(TLS_DIR, 'test-only-localhost.crt'), 'hi');
        expect(trusted).toMatchObject({ code: 0, killed: false });
        expect(lines(trusted.stdout)).toEqual(['over TLS']);

        const untrusted = await device(`wss://localhost:${port}/`, '--token', TOKEN, 'hi');
        expect(untrusted.code).toBe(3);
        expect(untrusted.stderr).toMatch(/TLS handshake failed/);
      } finally {
        await new Promise((resolve) => proxy.close(resolve));
      }
    });

    it('exits 3 with the HTTP status when the token is missing or wrong', async () => {
      const none = await device(stack.gateway.ws('/'), 'hi');
      expect(none.code).toBe(3);
      expect(none.stderr).toMatch(/could not connect to .*HTTP 401/);
      const wrong = await device(stack.gateway.ws('/'), '--token', 'not-the-token', 'hi');
      expect(wrong.code).toBe(3);
      expect(wrong.stderr).toMatch(/HTTP 403/);
      expect(stack.llm.requests).toHaveLength(0);
    });

    it('exits 1 with the code and message of an error frame', async () => {
      stack.llm.reply({ fault: 'http500' });
      const result = await device(stack.gateway.ws('/'), '--token', TOKEN, 'hi');
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(/^error: LLM_ERROR: /m);
    });

    it("exits 4 when no answer comes in time (before the gateway's own 5 s model timeout)", async () => {
      stack.llm.reply({ fault: 'hang' });
      const started = Date.now();
      const slow = await device(stack.gateway.ws('/'), '--token', TOKEN, '--timeout', '1', 'hi');
      expect(slow.code).toBe(4);
      expect(slow.stderr).toContain('error: timeout: no answer within 1 s');
      expect(Date.now() - started).toBeLessThan(3000);
    });

    it('exits 4 when the upgrade never completes, and 3 when nothing listens', async () => {
      const silent = createTcpServer((socket) => socket.on('error', () => undefined));
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      try {
        const started = Date.now();
        const hung = await device(`ws://127.0.0.1:${(silent.address() as AddressInfo).port}/`, '--timeout', '1', 'hi');
        expect(hung.code).toBe(4);
        expect(hung.stderr).toMatch(/could not connect .*LLM_ERR_TIMEOUT: connect timed out/);
        expect(Date.now() - started).toBeLessThan(3000);
      } finally {
        silent.close();
      }

      const port = await closedPort();
      const refused = await device(`ws://127.0.0.1:${port}/`, 'hi');
      expect(refused.code).toBe(3);
      expect(refused.stderr).toMatch(/could not connect/);
    });
  });

  describe('llm_device_example against a server that pushes its limits', () => {
    let server: WebSocketServer;
    let url: string;
    let mode: 'burst' | 'oversize' | 'close';

    beforeAll(async () => {
      server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
      await new Promise((resolve) => server.once('listening', resolve));
      url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/`;
      server.on('connection', (ws) => {
        ws.send(JSON.stringify({ type: 'status', status: 'connected', data: { session_id: 'burst-session' } }));
        ws.on('message', (data) => {
          const frame = JSON.parse(data.toString());
          if (frame.type === 'register_tools') ws.send(JSON.stringify({ type: 'tools_registered', count: 2, tools: [] }));
          if (frame.type !== 'text_input') return;
          if (mode === 'close') return ws.terminate();
          // 200 partials of up to 15 kB at once: the transport must keep them whole and in order
          for (let i = 0; i < 200; i++) {
            ws.send(JSON.stringify({ type: 'llm_response', content: `p${i}:${'x'.repeat((i * 997) % 15000)}`, is_final: false, seq: i }));
          }
          const fragmented = JSON.stringify({ type: 'llm_response', content: 'fragmented', is_final: false, seq: 200 });
          ws.send(fragmented.slice(0, 10), { fin: false });
          ws.send(fragmented.slice(10, 20), { fin: false });
          ws.send(fragmented.slice(20), { fin: true });
          if (mode === 'oversize') ws.send(JSON.stringify({ type: 'llm_response', content: 'y'.repeat(40000), is_final: false }));
          ws.send(JSON.stringify({ type: 'llm_response', content: 'final', is_final: true }));
          ws.send(JSON.stringify({ type: 'status', status: 'idle', data: {} }));
        });
      });
    });
    afterAll(() => new Promise((resolve) => server.close(resolve)));

    it('receives a burst of large and fragmented frames whole and in order', async () => {
      mode = 'burst';
      const result = await device(url, 'go');
      expect(result).toMatchObject({ code: 0, killed: false });
      const printed = lines(result.stdout);
      expect(printed).toHaveLength(202);
      printed.slice(0, 200).forEach((line, i) => expect(line).toBe(`p${i}:${'x'.repeat((i * 997) % 15000)}`));
      expect(printed.slice(200)).toEqual(['fragmented', 'final']);
    });

    it('reports a frame over its 16 kB maximum as an error, without crashing', async () => {
      mode = 'oversize';
      const result = await device(url, 'go');
      expect(result.code).toBe(1);
      expect(result.stderr).toContain("error: CLIENT_FRAME_TOO_LARGE: a frame over the transport's maximum was dropped (40053 bytes)");
      expect(lines(result.stdout).slice(-1)).toEqual(['fragmented']);
    });

    it('handles the burst, the oversized frame and the drop under ASan and UBSan, with nothing reported', async () => {
      mode = 'burst';
      const burst = await sanitizedDevice(url, 'go');
      expect(burst.code).toBe(0);
      expect(lines(burst.stdout)).toHaveLength(202);
      mode = 'oversize';
      expect((await sanitizedDevice(url, 'go')).code).toBe(1);
      mode = 'close';
      expect((await sanitizedDevice(url, 'go')).code).toBe(3);
    });

    it('exits 3 when the server drops the connection mid-turn', async () => {
      mode = 'close';
      const result = await device(url, 'go');
      expect(result.code).toBe(3);
      expect(result.stderr).toContain('error: the connection closed');
    });
  });

  describe('llm_device_example and pushed speech (frames with origin "push")', () => {
    let server: WebSocketServer;
    let url: string;

    beforeAll(async () => {
      server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
      await new Promise((resolve) => server.once('listening', resolve));
      url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/`;
      server.on('connection', (ws, request) => {
        const send = (frame: object) => ws.send(JSON.stringify({ ...frame, timestamp: new Date().toISOString() }));
        const push = (turnId: string, frame: object) => send({ ...frame, turn_id: turnId, origin: 'push' });
        const say = (turnId: string, content: string, extra: object = {}) => {
          push(turnId, { type: 'llm_response', content, tool_calls: [], is_final: true, ...extra });
          push(turnId, { type: 'status', status: 'idle', data: { session_id: 'push-session' } });
        };
        let ownTurn = '';
        send({ type: 'status', status: 'connected', data: { session_id: 'push-session' } });
        ws.on('message', (data) => {
          const frame = JSON.parse(data.toString());
          if (frame.type === 'register_tools') {
            send({ type: 'tools_registered', count: 2, tools: frame.tools.map((tool: any) => ({ name: tool.name, status: 'registered' })) });
            // A device that names itself is given what was held for it.
            if (request.url?.includes('device_id=kitchen')) say('push-held', 'Take your pills.', { reminder_id: 'rem-1' });
          } else if (frame.type === 'text_input') {
            // The text waits behind a pushed turn that calls a device tool.
            ownTurn = frame.turn_id;
            say('push-1', 'Dinner is ready.', { reminder_id: 'rem-2' });
            push('push-2', { type: 'status', status: 'processing', data: {} });
            push('push-2', { type: 'tool_callback', call_id: 'push-call', tool_name: 'set_volume', arguments: { volume: 20 } });
          } else if (frame.type === 'tool_result' && frame.call_id === 'push-call') {
            push('push-2', { type: 'llm_response', content: `Volume ${frame.result.volume}.`, tool_calls: [], is_final: true });
            push('push-2', { type: 'status', status: 'idle', data: {} });
            send({ type: 'status', status: 'processing', data: {}, turn_id: ownTurn });
            send({ type: 'llm_response', content: 'Good night.', tool_calls: [], is_final: true, turn_id: ownTurn });
            send({ type: 'status', status: 'idle', data: {}, turn_id: ownTurn });
            say('push-3', 'Sleep well.');
          }
        });
      });
    });
    afterAll(() => new Promise((resolve) => server.close(resolve)));

    it("prints pushed answers as [push], runs a pushed turn's tool, and still ends on its own answer", async () => {
      const result = await device(url, 'Good night');
      expect(result).toMatchObject({ code: 0, killed: false });
      expect(lines(result.stdout)).toEqual(['[push reminder_id=rem-2] Dinner is ready.', '[push] Volume 20.', 'Good night.']);
      expect(result.stderr).toContain('[push] tool set_volume ran on the device: ok');
    });

    it('waits for pushes after its answer, or only listens, under ASan and UBSan too', async () => {
      const waiting = await sanitizedDevice(url, '--pushes', '3', 'Good night');
      expect(waiting.code).toBe(0);
      expect(lines(waiting.stdout)).toEqual(['[push reminder_id=rem-2] Dinner is ready.', '[push] Volume 20.', 'Good night.', '[push] Sleep well.']);
      const listening = await sanitizedDevice(`${url}?device_id=kitchen`, '--pushes', '1');
      expect(listening.code).toBe(0);
      expect(lines(listening.stdout)).toEqual(['[push reminder_id=rem-1] Take your pills.']);
    });
  });
});

/** TLS in front of the gateway, with the test-only certificate for localhost. */
async function tlsProxy(targetPort: number): Promise<TlsServer> {
  const server = createTlsServer(
    { key: readFileSync(join(TLS_DIR, 'test-only-localhost.key')), cert: readFileSync(join(TLS_DIR, 'test-only-localhost.crt')) },
    (client) => {
      const upstream = createConnection(targetPort, '127.0.0.1');
      client.pipe(upstream).pipe(client);
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
      client.once('close', () => upstream.destroy());
    },
  );
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const probe = createTcpServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}
