import { Logger } from '@nestjs/common';
import { RedisOutageLog } from './redis-outage-log';

describe('RedisOutageLog', () => {
  let warn: jest.SpyInstance;
  let log: jest.SpyInstance;

  beforeEach(() => {
    jest.useFakeTimers({ now: 1_000_000 });
    warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    log = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
  });
  afterEach(() => {
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  it("is one log per Redis, whoever reports, that tells a flood of failures every 30 s and the return once, without the URL's password", () => {
    const url = 'redis://:hunter2@outage-one:6379';
    const refused = new Error('connect ECONNREFUSED 10.0.0.7:6379');
    // A dozen connections, each failing every 100 ms for a minute.
    for (let tick = 0; tick < 600; tick += 1) {
      for (let connection = 0; connection < 12; connection += 1) RedisOutageLog.of(url).failed(refused);
      jest.advanceTimersByTime(100);
    }
    expect(warn).toHaveBeenCalledTimes(2);
    expect(warn.mock.calls[0][0]).toBe('Redis at redis://:***@outage-one:6379 fails: connect ECONNREFUSED 10.0.0.7:6379; retrying');
    for (let connection = 0; connection < 12; connection += 1) RedisOutageLog.of(url).answered();
    expect(log.mock.calls.map(([message]) => message)).toEqual(['Redis at redis://:***@outage-one:6379 answers again']);

    // The next outage is told at once, not 30 s after the last line.
    RedisOutageLog.of(url).failed(refused);
    expect(warn).toHaveBeenCalledTimes(3);
  });

  it('says nothing of connections that become ready without an outage', () => {
    RedisOutageLog.of('redis://outage-two:6379').answered();
    expect(log).not.toHaveBeenCalled();
  });

  it('keeps the outages of two Redis apart', () => {
    RedisOutageLog.of('redis://outage-three:6379').failed(new Error('down'));
    RedisOutageLog.of('redis://outage-four:6379').failed(new Error('down'));
    expect(warn).toHaveBeenCalledTimes(2);
  });
});
