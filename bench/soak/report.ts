import { mkdir, writeFile } from 'fs/promises';
import { cpus, totalmem } from 'os';
import { join } from 'path';
import { MB } from './soak-process';

type Figure = Record<string, any>;

const yesNo = (met: boolean | undefined) => (met === undefined ? '' : met ? 'yes' : '**no**');

/** The soak's figures as the table RELIABILITY.md quotes: one line each, what was measured and against what. */
export function markdownTable(figures: Figure[]): string {
  const rows: string[][] = [];
  for (const figure of figures) {
    switch (figure.figure) {
      case 'churn': {
        const { left } = figure;
        const sessions = {
          kept: 'released sessions all kept (CLOUD_SESSION_TIMEOUT 3600 s, CLOUD_SESSION_MAX_PER_PRINCIPAL 0)',
          capped: "released sessions kept up to the token's cap (CLOUD_SESSION_TIMEOUT 3600 s, CLOUD_SESSION_MAX_PER_PRINCIPAL 1000, the defaults)",
          expiring: 'released sessions expiring (CLOUD_SESSION_TIMEOUT 2 s), heap read once swept',
        }[figure.sessions as 'kept' | 'capped' | 'expiring'];
        rows.push([
          `${figure.cycles.toLocaleString('en')} connect/disconnect cycles (${figure.workers} at a time), a device tool registered and its call pending in each; ${sessions}`,
          `heap after GC ${figure.heap_before_mb} MB → ${figure.heap_after_mb} MB (**${figure.heap_growth_pct}%**, ${figure.heap_growth_bytes_per_cycle} B a cycle); ${figure.cycles_per_s} cycles/s`,
          '< 10%',
          yesNo(figure.target.met),
        ]);
        rows.push([
          'left once every device is gone',
          `${left.connections} connections, ${left.device_tools} device tools, ${left.calls_running} calls running, ${left.attached_sessions} attached sessions, ${left.timers} timers (over ${left.timer_census_cycles} more cycles); ${left.stored_sessions.toLocaleString('en')} released sessions stored`,
          '0 of each but stored sessions',
          yesNo(left.connections + left.device_tools + left.calls_running + left.attached_sessions + (left.timers ?? 0) === 0),
        ]);
        break;
      }
      case 'slow_reader':
        rows.push([
          `${figure.readers === 1 ? '1 client that stops' : `${figure.readers} clients that stop`} reading while asking for ${figure.answers_asked_mb} MB of answers`,
          `peak RSS +${figure.peak_rss_growth_mb} MB, heap +${figure.peak_heap_growth_mb} MB; ${figure.closed_1008} closed with 1008 after ${figure.seconds_to_close} s; heap after GC +${figure.heap_growth_after_gc_mb} MB`,
          `about ${round1((figure.readers * figure.bound_bytes_per_reader) / MB)} MB (WS_MAX_BUFFERED_BYTES × clients), all closed 1008`,
          yesNo(figure.closed_1008 === figure.readers),
        ]);
        break;
      case 'unauthenticated_wave':
        rows.push([
          `${figure.waves} waves of ${figure.sockets_per_wave} sockets without a token (half on \`/utcp\`, half on the MCP envelope), each streaming an unfinished ${figure.frame_mb} MB frame`,
          `peak RSS +${figure.peak_rss_growth_mb} MB; ${figure.closed_1009} closed with 1009 in ${figure.seconds} s; heap after GC +${figure.heap_growth_after_gc_mb} MB`,
          `under a few hundred MB (WS_UNAUTHENTICATED_MAX_BYTES ${round1(figure.bound_bytes / 1024)} KB × sockets, plus the network's buffers), all closed 1009`,
          yesNo(figure.closed_1009 === figure.sockets_per_wave * figure.waves && figure.peak_rss_growth_mb < 300),
        ]);
        break;
      case 'unauthenticated_stall': {
        const pings = (window: Figure) =>
          `an authenticated client's ping: p50 ${window.ping_p50_ms} ms, p99 ${window.ping_p99_ms} ms, max ${window.ping_max_ms} ms, against ${figure.baseline.ping_p50_ms} / ${figure.baseline.ping_p99_ms} / ${figure.baseline.ping_max_ms} ms without them: **${signed(window.added_p99_ms)} ms** at p99; ${window.sockets_accepted} sockets accepted, ${window.added_cpu_us_per_socket} µs of gateway CPU each; peak RSS +${window.peak_rss_growth_mb} MB`;
        const sockets = `${figure.sockets} sockets without a token from one address, a new one as soon as one is closed (${figure.window_s} s)`;
        for (const [route, flooded] of Object.entries<Figure>(figure.flooded)) {
          rows.push([
            `${sockets} on \`${route}\`, each streaming an unfinished ${figure.frame_mb} MB frame`,
            pings(flooded),
            '≤ 5 ms added at p99',
            yesNo(flooded.added_p99_ms <= 5),
          ]);
        }
        rows.push([`${sockets} on \`${figure.silent.route}\`, sending nothing: what any client may cost`, pings(figure.silent), '', '']);
        break;
      }
      case 'catastrophic_pattern':
        rows.push([
          `\`${figure.pattern}\` in a device tool's schema, called with ${figure.input}, turn after turn (${figure.with_pattern.turns} turns in ${figure.window_s} s)`,
          `another client's ping: p50 ${figure.with_pattern.ping_p50_ms} ms, p99 ${figure.with_pattern.ping_p99_ms} ms, max ${figure.with_pattern.ping_max_ms} ms, against ${figure.baseline.ping_p50_ms} / ${figure.baseline.ping_p99_ms} / ${figure.baseline.ping_max_ms} ms without the pattern: **${signed(figure.added_ms.max)} ms** at most (the native engine: ~${figure.native_engine.estimated_ms_at_input_length.toLocaleString('en')} ms a call)`,
          '≤ 50 ms added',
          yesNo(figure.target.met),
        ]);
        break;
    }
  }
  return ['| what | measured | target | met |', '| --- | --- | --- | --- |', ...rows.map((row) => `| ${row.join(' | ')} |`)].join('\n');
}

const round1 = (value: number) => Math.round(value * 10) / 10;

/** A difference with its sign, `+3.2` or `-1.5`. */
const signed = (value: number) => `${value >= 0 ? '+' : ''}${round1(value)}`;

/** The machine the figures come from, for the record. */
export function machine(): Record<string, unknown> {
  return { cpus: cpus().length, cpu_model: cpus()[0]?.model, memory_gb: round1(totalmem() / 1024 ** 3), node: process.version, platform: process.platform };
}

/** Writes `soak.json` (every figure, with the machine and the date) and `soak.md` (the table) to `dir`. */
export async function writeReport(dir: string, figures: Figure[], smoke: boolean): Promise<void> {
  await mkdir(dir, { recursive: true });
  const record = { date: new Date().toISOString(), smoke, machine: machine(), figures };
  await writeFile(join(dir, 'soak.json'), `${JSON.stringify(record, null, 2)}\n`);
  await writeFile(join(dir, 'soak.md'), `${markdownTable(figures)}\n`);
}
