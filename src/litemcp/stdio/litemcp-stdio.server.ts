import { Logger } from '@nestjs/common';
import type { Readable, Writable } from 'stream';
import { GatewayError, GatewayErrorCode } from '../../core/errors/gateway-error';
import { FrameEvent, parseFrame } from '../../core/ws/frame-parser';
import { frameValidationPipe } from '../../core/validation/frame-validation.pipe';
import { LiteMcpCallFrameDto, LiteMcpGetFrameDto } from '../dto/litemcp-frame.dto';
import { errorFrame, failureFrame, frameId, infoFrame, resultFrame } from '../litemcp-frame';
import type { LiteMcpServerFrame } from '../litemcp.types';
import { LiteMcpService } from '../litemcp.service';
import { SeenIds } from '../seen-ids';
import { ThreeNewlineFramer } from './three-newline-framer';

const FRAME_END = '\n\n\n';

/**
 * LiteMCP over standard IO for one tool: requests on stdin, answers on stdout, both ended by
 * three newlines; logs go to stderr only. Requests are served concurrently and answered by id;
 * each answer is written in a single `write`, so answers never interleave. Resolves at EOF once
 * every request in flight has been answered.
 */
export class LiteMcpStdioServer {
  private readonly logger = new Logger('LiteMcpStdio');
  private readonly seen = new SeenIds();
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly liteMcp: LiteMcpService,
    private readonly toolName: string,
    private readonly limitBytes: number,
  ) {}

  serve(input: Readable, output: Writable): Promise<void> {
    const reply = (frame: LiteMcpServerFrame) => output.write(JSON.stringify(frame) + FRAME_END);
    const framer = new ThreeNewlineFramer(this.limitBytes, {
      frame: (text) => this.track(this.handle(text).then((answer) => answer && reply(answer))),
      oversized: (bytes) =>
        reply(errorFrame(null, GatewayErrorCode.PAYLOAD_TOO_LARGE, `Request of ${bytes} bytes is over the ${this.limitBytes}-byte limit`)),
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

  /** One request's answer, or `undefined` when the request is to be ignored (a repeated id). */
  async handle(text: string): Promise<LiteMcpServerFrame | undefined> {
    const { event, data } = parseFrame(text);
    const id = frameId(data);
    if (id !== null && !this.seen.remember(id)) return undefined;
    try {
      switch (event) {
        case 'get': {
          const frame = (await frameValidationPipe.transform(data, { type: 'body', metatype: LiteMcpGetFrameDto })) as LiteMcpGetFrameDto;
          return infoFrame(frame.id, this.liteMcp.describe(this.toolName, frame.version));
        }
        case 'call': {
          const frame = (await frameValidationPipe.transform(data, { type: 'body', metatype: LiteMcpCallFrameDto })) as LiteMcpCallFrameDto;
          const { result } = await this.liteMcp.call(this.toolName, frame.data);
          return resultFrame(frame.id, result);
        }
        case FrameEvent.MALFORMED:
          throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, (data as { reason: string }).reason);
        case FrameEvent.UNTYPED:
          throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, 'A request must be a JSON object with a string "type"');
        default:
          throw new GatewayError(
            GatewayErrorCode.UNKNOWN_MESSAGE_TYPE,
            `Unknown request type ${JSON.stringify((data as { type: string }).type)}: expected "get" or "call"`,
          );
      }
    } catch (exception) {
      return failureFrame(data, exception, this.logger);
    }
  }

  private track(work: Promise<unknown>): void {
    const tracked = work.then(
      () => undefined,
      (error) => this.logger.error(`Unexpected stdio failure: ${(error as Error).stack}`),
    );
    this.inFlight.add(tracked);
    void tracked.finally(() => this.inFlight.delete(tracked));
  }
}
