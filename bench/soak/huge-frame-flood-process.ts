import type { Socket } from 'net';
import { streamHugeFrame, upgradeRaw } from '../../test/support/raw-websocket';

/** What the parent asks for (bench/soak/huge-frame-flood.ts): one flood, then the process exits. */
export interface FloodCommand {
  port: number;
  path: string;
  /** Sockets kept open at once, all from 127.0.0.1, none with a token. */
  sockets: number;
  /** What each socket's one frame says it carries; 0: the socket sends nothing. */
  frameBytes: number;
  durationMs: number;
}

export interface FloodReport {
  type: 'flood';
  /** Upgrades accepted: every socket the gateway let in, each streaming its frame until cut off. */
  connections: number;
  /** Upgrades refused (a cap): retried after a pause. */
  refused: number;
}

/** A refused upgrade is retried after this pause, so a full cap is not a busy loop. */
const RETRY_MS = 20;

/** Resolves once the gateway has closed `socket`, which sends nothing meanwhile. */
function silentUntilClosed(socket: Socket): Promise<void> {
  socket.on('error', () => undefined);
  return new Promise((resolve) => socket.once('close', () => resolve()));
}

/**
 * The abusive clients, in a process of their own so that writing their frames does not slow the
 * bench's pinger: `sockets` loops, each opening a socket without a token, announcing an unfinished
 * huge frame and writing its payload as fast as the gateway reads (or sending nothing), opening
 * the next one as soon as the gateway closes it, until `durationMs` have passed.
 */
async function flood(command: FloodCommand): Promise<FloodReport> {
  const end = Date.now() + command.durationMs;
  const report: FloodReport = { type: 'flood', connections: 0, refused: 0 };
  const loop = async () => {
    while (Date.now() < end) {
      let socket;
      try {
        socket = await upgradeRaw(command.port, command.path);
      } catch {
        report.refused += 1;
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
        continue;
      }
      report.connections += 1;
      const stop = setTimeout(() => socket.destroy(), Math.max(0, end - Date.now()));
      if (command.frameBytes > 0) await streamHugeFrame(socket, command.frameBytes);
      else await silentUntilClosed(socket);
      clearTimeout(stop);
    }
  };
  await Promise.all(Array.from({ length: command.sockets }, loop));
  return report;
}

process.once('message', (command: FloodCommand) => {
  flood(command).then(
    (report) => process.send?.(report, () => process.exit(0)),
    (error: Error) => {
      process.stderr.write(`flood failed: ${error.stack ?? error}\n`);
      process.exit(1);
    },
  );
});
