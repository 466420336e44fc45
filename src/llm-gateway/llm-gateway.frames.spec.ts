import { GatewayErrorCode } from '../core/errors/gateway-error';
import { FRAME_MAX_DEPTH } from '../core/validation/frame-schema';
import { LIMITS, LlmServerFrame, parseServerFrame, SERVER_FRAME_TYPES } from './protocol';
import { errorFrame, llmResponseFrame, pongFrame, statusFrame, toolCallbackFrame, toolCallFrame, toolsRegisteredFrame } from './llm-gateway.frames';

describe('the LLM gateway frames', () => {
  it('cover every server frame of the wire contract, and read back as the client SDK reads them', () => {
    const frames: LlmServerFrame[] = [
      statusFrame('connected', { session_id: 's' }),
      llmResponseFrame('hi', [{ call_id: 'c', name: 't', arguments: {}, location: 'client', success: true }]),
      toolCallFrame({ tool_name: 't', arguments: {}, result: 1, success: true, duration_ms: 2 }),
      toolCallbackFrame('c', 't', { a: 1 }),
      toolsRegisteredFrame([{ name: 't', status: 'registered' }]),
      errorFrame(GatewayErrorCode.LLM_ERROR, 'failed', 'HTTP 500'),
      pongFrame(),
    ];
    expect(frames.map((frame) => frame.type).sort()).toEqual([...SERVER_FRAME_TYPES].sort());
    for (const frame of frames) expect(parseServerFrame(JSON.stringify(frame))).toEqual(frame);
  });

  it('tells clients the nesting bound the dispatcher holds every frame to', () => {
    expect(LIMITS.frameDepth).toBe(FRAME_MAX_DEPTH);
  });
});
