import { execFile } from 'child_process';
import { existsSync } from 'fs';
import { mkdtemp, readFile, rm } from 'fs/promises';
import { tmpdir } from 'os';
import { join } from 'path';
import { promisify } from 'util';
import { PROJECT_ROOT } from '../support/built';

const RUN_SOAK = join(PROJECT_ROOT, 'dist-bench', 'bench', 'soak.js');

/**
 * `npm run soak --smoke`: every phase with tiny counts, so the script that produces
 * RELIABILITY.md keeps working. Timings are not asserted (a busy machine would fail them); what
 * must hold whatever the machine is: every figure comes out whole, in JSON and in the table,
 * nothing is left behind by the churn, and every slow reader is closed with 1008.
 */
describe('the soak, in smoke mode', () => {
  let out: string;
  let printed: any[];
  let written: any;
  let table: string;

  beforeAll(async () => {
    if (!existsSync(RUN_SOAK)) throw new Error(`${RUN_SOAK} is missing: run "npm run build:bench" (npm test does it first)`);
    out = await mkdtemp(join(tmpdir(), 'soak-smoke-'));
    const { stdout } = await promisify(execFile)(process.execPath, ['--expose-gc', RUN_SOAK, '--smoke', `--out=${out}`], {
      cwd: PROJECT_ROOT,
      timeout: 90_000,
      maxBuffer: 1 << 24,
    });
    printed = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    written = JSON.parse(await readFile(join(out, 'soak.json'), 'utf8'));
    table = await readFile(join(out, 'soak.md'), 'utf8');
  }, 100_000);
  afterAll(() => rm(out, { recursive: true, force: true }));

  const positive = expect.any(Number);

  it('prints each figure and writes the same ones, with the machine and the date', () => {
    expect(printed.map((figure) => figure.figure)).toEqual([
      'churn',
      'churn',
      'churn',
      'slow_reader',
      'catastrophic_pattern',
      'unauthenticated_wave',
      'unauthenticated_stall',
    ]);
    expect(written).toMatchObject({ smoke: true, date: expect.any(String), machine: { cpus: positive, node: process.version }, figures: printed });
    // The header, its rule, two lines a churn, one a slow reader, one the pattern, one the unauthenticated wave, one per route flooded and one for silent sockets.
    expect(table.split('\n').filter((line) => line.startsWith('| ')).length).toBe(2 + 9 + 4);
  });

  it('churns devices with calls pending and leaves nothing but resumable sessions behind, then nothing once they expire', () => {
    const [kept, capped, expiring] = printed;
    expect(capped).toMatchObject({ sessions: 'capped', left: { connections: 0, device_tools: 0, calls_running: 0, timers: 0, stored_sessions: positive } });
    expect(expiring).toMatchObject({ sessions: 'expiring', left: { connections: 0, device_tools: 0, calls_running: 0, timers: 0, stored_sessions: 0 } });
    expect(kept).toMatchObject({
      sessions: 'kept',
      cycles: 100,
      heap_before_mb: positive,
      heap_after_mb: positive,
      heap_growth_pct: expect.any(Number),
      left: { connections: 0, attached_sessions: 0, device_tools: 0, calls_running: 0, timers: 0, stored_sessions: positive },
      target: { max_heap_growth_pct: 10, met: expect.any(Boolean) },
    });
  });

  it('closes every socket without a token that streams an unfinished frame with 1009', () => {
    const wave = printed.find((figure) => figure.figure === 'unauthenticated_wave');
    expect(wave).toMatchObject({ sockets_per_wave: 4, waves: 1, closed_1009: 4, peak_rss_growth_mb: expect.any(Number), bound_bytes: 65_536 });
  });

  it("times an authenticated client's pings without sockets that go over WS_UNAUTHENTICATED_MAX_BYTES, under a flood of them on each route, and under silent ones", () => {
    const stall = printed.find((figure) => figure.figure === 'unauthenticated_stall');
    const flooded = { ping_p50_ms: positive, ping_p99_ms: positive, ping_max_ms: positive, sockets_accepted: positive, closed_1009: positive };
    expect(stall).toMatchObject({
      sockets: 4,
      baseline: { ping_p50_ms: positive, ping_p99_ms: positive, pings: positive },
      flooded: { '/utcp': flooded, '/mcp': flooded, '/utcp/calculator': flooded },
      silent: { route: '/utcp', ping_p99_ms: positive, sockets_accepted: positive, closed_1009: 0 },
    });
  });

  it('closes the client that stops reading with 1008, and says what memory it cost', () => {
    const [, , , slowReader] = printed;
    expect(slowReader).toMatchObject({
      readers: 1,
      closed_1008: 1,
      requests_sent: positive,
      peak_rss_growth_mb: expect.any(Number),
      bound_bytes_per_reader: 4_194_304,
    });
  });

  it("times another client's pings with the catastrophic pattern and without it", () => {
    const [, , , , pattern] = printed;
    expect(pattern).toMatchObject({
      pattern: '^(a+)+$',
      baseline: { turns: positive, ping_p50_ms: positive, ping_max_ms: positive },
      with_pattern: { turns: positive, ping_p50_ms: positive, ping_max_ms: positive },
      added_ms: { max: expect.any(Number) },
      native_engine: { estimated_ms_at_input_length: positive },
      target: { max_added_ms: 50, met: expect.any(Boolean) },
    });
  });
});
