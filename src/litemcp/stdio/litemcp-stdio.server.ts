import { Logger } from '@nestjs/common';
import { randomUUID } from 'crypto';
import type { Readable, Writable } from 'stream';
import { ANONYMOUS_PRINCIPAL } from '../../core/auth/access-token.service';
import type { FrameConnection } from '../../core/ws/connection';
import { FrameDispatcher } from '../../core/ws/frame-dispatcher';
import { FrameRejection } from '../../core/ws/frame-rejection';
import type { LiteMcpConnectionState, LiteMcpGateway } from '../litemcp.gateway';
import { ThreeNewlineFramer } from './three-newline-framer';

const FRAME_END = '\n\n\n';

/** Standard IO as a LiteMCP connection: one client, no authentication (whoever runs the process is it). */
class StdioConnection implements FrameConnection<LiteMcpConnectionState> {
  readonly id = randomUUID();
  readonly protocol = 'litemcp';
  readonly subprotocol = '';
  readonly principal = ANONYMOUS_PRINCIPAL;
  readonly params: Readonly<Record<string, string>>;
  state!: LiteMcpConnectionState;

  constructor(
    toolName: string,
    private readonly output: Writable,
  ) {
    this.params = { tool: toolName };
  }

  /** Each answer in a single `write`, so answers never interleave. */
  send(frame: unknown): boolean {
    return this.output.write(`${typeof frame === 'string' ? frame : JSON.stringify(frame)}${FRAME_END}`);
  }

  markAlive(): void {}
}

/**
 * LiteMCP over standard IO for one tool: requests on stdin, answers on stdout, both ended by
 * three newlines; logs go to stderr only. Requests go through the same dispatcher and handlers
 * as LiteMCP over WebSocket (`LiteMcpGateway`): served concurrently, answered by id, a repeated
 * id ignored. Resolves at EOF once every request in flight has been answered.
 */
export class LiteMcpStdioServer {
  private readonly logger = new Logger('LiteMcpStdio');
  private readonly dispatcher: FrameDispatcher;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly gateway: LiteMcpGateway,
    private readonly toolName: string,
    private readonly limitBytes: number,
  ) {
    this.dispatcher = new FrameDispatcher(gateway);
  }

  serve(input: Readable, output: Writable): Promise<void> {
    const connection = new StdioConnection(this.toolName, output);
    this.gateway.onOpen(connection);
    const framer = new ThreeNewlineFramer(this.limitBytes, {
      frame: (text) => this.track(this.dispatcher.dispatch(connection, text)),
      oversized: (bytes) =>
        this.dispatcher.refuse(connection, new FrameRejection('too-large', `Request of ${bytes} bytes is over the ${this.limitBytes}-byte limit`)),
    });
    this.logger.log(`Serving tool "${this.toolName}" as LiteMCP over stdio`);
    return new Promise((resolve, reject) => {
      input.on('data', (chunk: Buffer) => framer.push(chunk));
      input.once('error', reject);
      input.once('end', () => {
        framer.end();
        void Promise.all(this.inFlight).then(() => {
          this.logger.log('Input ended; every request answered');
          resolve();
        });
      });
    });
  }

  private track(answered: Promise<void> | undefined): void {
    if (!answered) return;
    this.inFlight.add(answered);
    void answered.finally(() => this.inFlight.delete(answered));
  }
}
