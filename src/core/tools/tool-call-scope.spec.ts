import { EventEmitter } from 'events';
import type { ServerResponse } from 'http';
import type { AuthenticatedRequest } from '../auth/bearer-auth.guard';
import { CallsInFlight } from '../limits/calls-in-flight';
import { ToolCallScope, ToolCallOrigin } from './tool-call-scope';

/** A response that closes like Node's: `writableFinished` says whether it was answered in full first. */
class ClosingResponse extends EventEmitter {
  writableFinished = false;

  close(finished: boolean): void {
    this.writableFinished = finished;
    this.emit('close');
  }
}

const request = (principal?: string) => ({ principal }) as AuthenticatedRequest;

describe('ToolCallScope', () => {
  const closes = new AbortController();
  const callsInFlight = new CallsInFlight(4);
  const connection: ToolCallOrigin = { id: 'c-1', protocol: 'litemcp', principal: 'name:kitchen', signal: closes.signal, callsInFlight };

  it('of a connection: its principal, id, protocol, close signal and calls in flight, counted against the rate limit', () => {
    expect({ ...ToolCallScope.ofConnection(connection) }).toEqual({
      protocol: 'litemcp',
      principal: 'name:kitchen',
      connectionId: 'c-1',
      signal: closes.signal,
      callsInFlight,
      rateLimited: true,
      sessionId: undefined,
      turnId: undefined,
      audience: 'agent',
    });
  });

  it('of a connection: the principal as it is when the call comes (an auth frame may settle it after the upgrade)', () => {
    const unauthenticated: ToolCallOrigin = { id: 'c-2', protocol: 'utcp' };
    const before = ToolCallScope.ofConnection(unauthenticated);
    unauthenticated.principal = 'token:0123456789abcdef';
    expect(before.principal).toBeUndefined();
    expect(ToolCallScope.ofConnection(unauthenticated).principal).toBe('token:0123456789abcdef');
  });

  it('of an HTTP request: its principal and protocol, no connection, a signal that aborts only when the client goes away', () => {
    const goneAway = new ClosingResponse();
    const scope = ToolCallScope.ofRequest('utcp', request('anonymous'), goneAway as unknown as ServerResponse);
    expect(scope).toMatchObject({ protocol: 'utcp', principal: 'anonymous', connectionId: undefined, callsInFlight: undefined });
    expect(scope.rateLimited).toBe(true);
    expect(scope.signal?.aborted).toBe(false);
    goneAway.close(false);
    expect(scope.signal?.aborted).toBe(true);
    expect(scope.signal?.reason).toMatchObject({ name: 'AbortError', message: 'The client went away' });

    const answered = new ClosingResponse();
    const served = ToolCallScope.ofRequest('litemcp', request(), answered as unknown as ServerResponse);
    answered.close(true);
    expect(served.signal?.aborted).toBe(false);
  });

  it("of a turn: the session, the turn and its round's signal; limited as a turn, not call by call", () => {
    const round = new AbortController();
    const scope = ToolCallScope.ofTurn({ ...connection, protocol: 'llm' }, { sessionId: 's-1', turnId: 't-1', signal: round.signal });
    expect({ ...scope }).toEqual({
      protocol: 'llm',
      principal: 'name:kitchen',
      connectionId: 'c-1',
      signal: round.signal,
      callsInFlight: undefined,
      rateLimited: false,
      sessionId: 's-1',
      turnId: 't-1',
      audience: 'model',
    });
  });

  it('with a signal of its own for one request, everything else kept', () => {
    const scope = ToolCallScope.ofConnection(connection);
    const request = new AbortController();
    expect({ ...scope.withSignal(request.signal) }).toEqual({ ...scope, signal: request.signal });
    expect(scope.signal).toBe(closes.signal);
  });
});
