import { Heartbeat } from './heartbeat';

describe('Heartbeat', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  const start = () => {
    const events: string[] = [];
    const heartbeat = new Heartbeat({
      intervalMs: 100,
      timeoutMs: 250,
      ping: () => events.push(`ping@${Date.now() % 10_000}`),
      onTimeout: () => events.push(`timeout@${Date.now() % 10_000}`),
    });
    return { heartbeat, events };
  };

  it('pings every interval and times out when nothing proves the peer alive', () => {
    jest.setSystemTime(0);
    const { events } = start();
    jest.advanceTimersByTime(1000);
    expect(events).toEqual(['ping@100', 'ping@200', 'timeout@250']);
  });

  it('starts the timeout over on every sign of life', () => {
    jest.setSystemTime(0);
    const { heartbeat, events } = start();
    jest.advanceTimersByTime(200);
    heartbeat.alive();
    jest.advanceTimersByTime(200);
    heartbeat.alive();
    jest.advanceTimersByTime(300);
    expect(events).toEqual(['ping@100', 'ping@200', 'ping@300', 'ping@400', 'ping@500', 'ping@600', 'timeout@650']);
  });

  it('does nothing more once stopped, even when told the peer is alive', () => {
    const { heartbeat, events } = start();
    heartbeat.stop();
    heartbeat.alive();
    jest.advanceTimersByTime(1000);
    expect(events).toEqual([]);
  });
});
