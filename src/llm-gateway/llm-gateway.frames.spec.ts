import * as sdk from '../../packages/client-sdk/src/frames';
import { GatewayErrorCode } from '../core/errors/gateway-error';
import { LANGUAGE_CODES } from '../core/session/session';
import type { ConfigureDto, TextInputDto, ToolResultDto } from './dto/client-messages.dto';
import { MAX_TOKENS_CEILING } from './dto/client-messages.dto';
import {
  errorFrame,
  llmResponseFrame,
  LlmServerFrame,
  pongFrame,
  statusFrame,
  toolCallbackFrame,
  toolCallFrame,
  toolsRegisteredFrame,
} from './llm-gateway.frames';

/** True when each type is assignable to the other; checked by `npm run typecheck`. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

const contract: [
  Same<LlmServerFrame, sdk.LlmServerFrame>,
  Same<Required<ConfigureDto>, Required<sdk.ConfigureSettings>>,
  Same<Omit<TextInputDto, never>, Omit<sdk.TextInputFrame, 'type'>>,
  Same<ToolResultDto, Omit<sdk.ToolResultFrame, 'type'>>,
] = [true, true, true, true];

describe('the client SDK (packages/client-sdk) speaks these frames', () => {
  it('has the same frame types (checked at compile time)', () => {
    expect(contract).toEqual([true, true, true, true]);
  });

  it('has the same error codes, languages and max_tokens ceiling', () => {
    expect([...sdk.GATEWAY_ERROR_CODES].sort()).toEqual(Object.values(GatewayErrorCode).sort());
    expect([...sdk.LANGUAGE_CODES]).toEqual(LANGUAGE_CODES);
    expect(sdk.MAX_TOKENS_CEILING).toBe(MAX_TOKENS_CEILING);
  });

  it('reads every frame the gateway builds', () => {
    const frames: LlmServerFrame[] = [
      statusFrame('connected', { session_id: 's' }),
      llmResponseFrame('hi', [{ call_id: 'c', name: 't', arguments: {}, location: 'client', success: true }]),
      toolCallFrame({ tool_name: 't', arguments: {}, result: 1, success: true, duration_ms: 2 }),
      toolCallbackFrame('c', 't', { a: 1 }),
      toolsRegisteredFrame([{ name: 't', status: 'registered' }]),
      errorFrame(GatewayErrorCode.LLM_ERROR, 'failed', 'HTTP 500'),
      pongFrame(),
    ];
    expect(frames.map((frame) => frame.type).sort()).toEqual([...sdk.SERVER_FRAME_TYPES].sort());
    for (const frame of frames) expect(sdk.parseServerFrame(JSON.stringify(frame))).toEqual(frame);
  });
});
