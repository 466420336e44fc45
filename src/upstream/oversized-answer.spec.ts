import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/client';
import { answeredRequestId, answeredRequestIdOfLine, oversizedAnswer, oversizedAnswerError, oversizedAnswerOf } from './oversized-answer';

const BIG = 'x'.repeat(3000);
/** The two kilobyte ends of `message` as JSON, as the splitter keeps them. */
const ends = (json: string) => ({ head: json.slice(0, 1024), tail: json.slice(-1024) });

describe('answeredRequestId', () => {
  it('reads the id after the result, as the TypeScript SDK writes it', () => {
    const { head, tail } = ends(JSON.stringify({ result: { content: [{ type: 'text', text: BIG, id: 9 }] }, jsonrpc: '2.0', id: 7 }));
    expect(answeredRequestId(head, tail)).toBe(7);
  });

  it('reads the id before the result, as the Python SDK writes it', () => {
    const { head, tail } = ends(JSON.stringify({ jsonrpc: '2.0', id: 'call-3', result: { content: [{ type: 'text', text: BIG }] } }));
    expect(answeredRequestId(head, tail)).toBe('call-3');
  });

  it('reads an error answer too', () => {
    const { head, tail } = ends(JSON.stringify({ jsonrpc: '2.0', id: 4, error: { code: -32000, message: BIG } }));
    expect(answeredRequestId(head, tail)).toBe(4);
  });

  it("takes no nested id for the answer's own", () => {
    const { head, tail } = ends(JSON.stringify({ jsonrpc: '2.0', result: { content: [{ type: 'text', text: BIG }], item: { id: 5 } } }));
    expect(answeredRequestId(head, tail)).toBeUndefined();
  });

  it('tells requests and notifications from answers', () => {
    const request = ends(JSON.stringify({ method: 'sampling/createMessage', params: { text: BIG }, jsonrpc: '2.0', id: 2 }));
    expect(answeredRequestId(request.head, request.tail)).toBeUndefined();
    const notification = ends(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { data: BIG } }));
    expect(answeredRequestId(notification.head, notification.tail)).toBeUndefined();
    expect(answeredRequestId('not json', 'at all')).toBeUndefined();
  });

  it("reads an event stream's data line after its prefix", () => {
    const json = JSON.stringify({ result: { content: [{ type: 'text', text: BIG }] }, jsonrpc: '2.0', id: 12 });
    const line = { bytes: 0, head: Buffer.from(`data: ${json}`.slice(0, 1024)), tail: Buffer.from(`${json.slice(-1024)}\r`) };
    expect(answeredRequestIdOfLine(line, 'data:')).toBe(12);
    expect(answeredRequestIdOfLine({ ...line, head: Buffer.from(`: ${json}`.slice(0, 1024)) }, 'data:')).toBeUndefined();
  });
});

describe('the stand-in for an oversized answer', () => {
  it('is a JSON-RPC error for the same request, naming the setting, that the tool sync recognises', () => {
    const answer = oversizedAnswer(7, { maxBytes: 2048, bytes: 52_428_800 });
    expect(answer).toMatchObject({
      jsonrpc: '2.0',
      id: 7,
      error: {
        code: ProtocolErrorCode.InternalError,
        message: 'the answer of 52428800 bytes is over MCP_UPSTREAM_MAX_RESULT_BYTES (2048 bytes) and was dropped',
      },
    });
    const asTheSdkRaisesIt = new ProtocolError(answer.error.code, answer.error.message, answer.error.data);
    expect(oversizedAnswerOf(asTheSdkRaisesIt)).toEqual({ maxBytes: 2048, bytes: 52_428_800 });
    expect(oversizedAnswerOf(oversizedAnswerError({ maxBytes: 2048 }))).toEqual({ maxBytes: 2048 });
  });

  it("is not confused with an upstream's own errors", () => {
    expect(oversizedAnswerOf(new ProtocolError(ProtocolErrorCode.InternalError, 'boom'))).toBeUndefined();
    expect(oversizedAnswerOf(new ProtocolError(ProtocolErrorCode.InvalidParams, 'x', { oversizedAnswer: { maxBytes: 1 } }))).toBeUndefined();
    expect(oversizedAnswerOf(new Error('plain'))).toBeUndefined();
  });
});
