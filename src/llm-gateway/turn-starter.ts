import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'crypto';
import { GatewayError, GatewayErrorCode } from '../core/errors/gateway-error';
import type { LlmConnection } from './llm-connection';
import type { TextInputFrame } from './protocol';
import { Turn, TurnOptions } from './turn';
import { TurnEnvironment } from './turn-environment';

/**
 * Puts a turn in its connection's queue, behind the requests before it: a device's `text_input`,
 * or a turn the fleet starts for the device. A turn cancelled while it waits leaves the queue
 * and ends at once.
 */
@Injectable()
export class TurnStarter {
  private readonly logger = new Logger('LlmGateway');

  constructor(private readonly env: TurnEnvironment) {}

  /** The turn, queued; `interrupt` cancels the turns running or waiting first (barge-in). */
  start(connection: LlmConnection, input: TextInputFrame, options: TurnOptions & { interrupt: boolean }): Turn {
    const { turns } = connection.state;
    const turnId = input.turn_id ?? randomUUID();
    if (turns.has(turnId)) throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, `Turn "${turnId}" is already running or waiting`);
    if (options.interrupt) for (const earlier of [...turns.values()]) earlier.cancel();
    const turn = new Turn(turnId, connection, input, this.env, { origin: options.origin, untilSpoken: options.untilSpoken });
    const queued = connection.queue().schedule(() => turn.play());
    turn.whileWaiting(() => {
      if (queued.withdraw()) turn.play().catch((error: Error) => this.logger.error(`Turn ${turnId} could not end: ${error.stack}`));
    });
    turns.set(turnId, turn);
    return turn;
  }
}
