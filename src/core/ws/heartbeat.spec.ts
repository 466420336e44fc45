import { Heartbeat, HeartbeatPeer } from './heartbeat';

describe('Heartbeat', () => {
  beforeEach(() => {
    jest.useFakeTimers();
    jest.setSystemTime(0);
  });
  afterEach(() => jest.useRealTimers());

  const peer = (events: string[], name = ''): HeartbeatPeer => ({
    heartbeatPing: () => events.push(`${name}ping@${Date.now()}`),
    heartbeatTimedOut: () => events.push(`${name}timeout@${Date.now()}`),
  });

  it('pings once every interval and times out at the first beat after the timeout without a sign of life', () => {
    const events: string[] = [];
    Heartbeat.start({ intervalMs: 100, timeoutMs: 250 }, peer(events));
    jest.advanceTimersByTime(1000);
    // Its slot is the first of ten: beaten at 10, 110, 210, ...; silent since 0, it ends at 310.
    expect(events).toEqual(['ping@10', 'ping@110', 'ping@210', 'timeout@310']);
  });

  it('starts the timeout over on every sign of life', () => {
    const events: string[] = [];
    const heartbeat = Heartbeat.start({ intervalMs: 100, timeoutMs: 250 }, peer(events));
    jest.advanceTimersByTime(200);
    heartbeat.alive();
    jest.advanceTimersByTime(200);
    heartbeat.alive();
    jest.advanceTimersByTime(310);
    expect(events).toEqual(['ping@10', 'ping@110', 'ping@210', 'ping@310', 'ping@410', 'ping@510', 'ping@610', 'timeout@710']);
  });

  it('does nothing more once stopped, even when told the peer is alive', () => {
    const events: string[] = [];
    const heartbeat = Heartbeat.start({ intervalMs: 100, timeoutMs: 250 }, peer(events));
    heartbeat.stop();
    heartbeat.alive();
    jest.advanceTimersByTime(1000);
    expect(events).toEqual([]);
  });

  it('spreads the heartbeats of one interval over its slots, and leaves no timer once the last stops', () => {
    const events: string[] = [];
    const heartbeats = ['a', 'b', 'c'].map((name) => Heartbeat.start({ intervalMs: 100, timeoutMs: 1000 }, peer(events, name)));
    jest.advanceTimersByTime(100);
    expect(events).toEqual(['aping@10', 'bping@20', 'cping@30']);
    heartbeats.forEach((heartbeat) => heartbeat.stop());
    expect(jest.getTimerCount()).toBe(0);
  });

  it('keeps beating the others when one times out during a beat', () => {
    const events: string[] = [];
    const heartbeats = Array.from({ length: 11 }, (_, index) => Heartbeat.start({ intervalMs: 100, timeoutMs: 150 }, peer(events, `${index}-`)));
    jest.advanceTimersByTime(100);
    heartbeats.slice(1).forEach((heartbeat) => heartbeat.alive());
    jest.advanceTimersByTime(150);
    // 0 and 10 share the first slot; 0 stayed silent and ends, 10 is pinged in the same beat.
    expect(events.filter((event) => event.endsWith('@210'))).toEqual(['0-timeout@210', '10-ping@210']);
    heartbeats.forEach((heartbeat) => heartbeat.stop());
  });
});
