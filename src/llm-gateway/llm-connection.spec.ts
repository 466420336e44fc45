import { firstValueFrom, toArray } from 'rxjs';
import type { WebSocket } from 'ws';
import { LlmConnection, MAX_WAITING_REQUESTS } from './llm-connection';
import { statusFrame } from './llm-gateway.frames';

const socket = { readyState: 1, send: jest.fn() } as unknown as WebSocket;

describe('LlmConnection', () => {
  it('runs requests one after another, after the session is open', async () => {
    const connection = new LlmConnection('c', socket, 'p');
    const order: string[] = [];
    let open!: () => void;
    connection.startWith(() => new Promise<void>((resolve) => (open = () => (order.push('open'), resolve()))));
    const slow = connection.serialize(async (emit) => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      order.push('first');
      emit(statusFrame('idle'));
    });
    const fast = connection.serialize(async () => {
      order.push('second');
    });
    const results = Promise.all([firstValueFrom(slow.pipe(toArray())), firstValueFrom(fast.pipe(toArray()))]);
    await new Promise((resolve) => setImmediate(resolve));
    open();
    const [slowFrames] = await results;
    expect(order).toEqual(['open', 'first', 'second']);
    expect(slowFrames).toHaveLength(1);
  });

  it('routes frames sent during a request into that request\'s stream', async () => {
    const connection = new LlmConnection('c', socket, 'p');
    const frames = await firstValueFrom(
      connection.serialize(async () => connection.send(statusFrame('waiting_for_tools', { pending_tools: 1 }))).pipe(toArray()),
    );
    expect(frames).toEqual([expect.objectContaining({ status: 'waiting_for_tools' })]);
    connection.send(statusFrame('idle'));
    expect(socket.send).toHaveBeenCalledWith(expect.stringContaining('"idle"'));
  });

  it('aborts a request whose stream is dropped, and refuses a queue that grows too long', async () => {
    const connection = new LlmConnection('c', socket, 'p');
    let aborted = false;
    const running = connection
      .serialize((_emit, signal) => new Promise<void>((resolve) => signal.addEventListener('abort', () => ((aborted = true), resolve()))))
      .subscribe();
    const waiting = Array.from({ length: MAX_WAITING_REQUESTS }, () => connection.serialize(async () => undefined).subscribe());
    const refused = await firstValueFrom(connection.serialize(async () => undefined).pipe(toArray()));
    expect(refused).toEqual([expect.objectContaining({ type: 'error', code: 'INVALID_MESSAGE' })]);
    running.unsubscribe();
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(aborted).toBe(true);
    waiting.forEach((subscription) => subscription.unsubscribe());
  });
});
