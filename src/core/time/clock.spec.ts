import { zonedTime } from './clock';
import { isKnownTimeZone } from '../../shared/time-zone';

describe('zonedTime', () => {
  const moment = new Date('2026-11-21T10:30:05.000Z');

  it('reads the wall clock of a zone with its offset', () => {
    expect(zonedTime(moment, 'Asia/Shanghai')).toEqual({
      timezone: 'Asia/Shanghai',
      iso: '2026-11-21T18:30:05+08:00',
      date: '2026-11-21',
      time: '18:30:05',
      weekday: 'Saturday',
      utc_offset: '+08:00',
      unix_ms: moment.getTime(),
    });
    expect(zonedTime(moment, 'UTC').iso).toBe('2026-11-21T10:30:05+00:00');
    expect(zonedTime(moment, 'America/New_York').iso).toBe('2026-11-21T05:30:05-05:00');
    expect(zonedTime(moment, 'Asia/Kolkata').utc_offset).toBe('+05:30');
  });

  it('reads every zone right while many zones take turns (the formatters kept are bounded)', () => {
    const zones = Intl.supportedValuesOf('timeZone').slice(0, 80);
    const first = zones.map((zone) => zonedTime(moment, zone).iso);
    expect(zones.map((zone) => zonedTime(moment, zone).iso)).toEqual(first);
    expect(zonedTime(moment, 'Asia/Shanghai').iso).toBe('2026-11-21T18:30:05+08:00');
    expect(zonedTime(moment, 'America/New_York').iso).toBe('2026-11-21T05:30:05-05:00');
  });

  it('throws for an unknown zone', () => {
    expect(() => zonedTime(moment, 'Mars/Olympus')).toThrow(RangeError);
    expect(isKnownTimeZone('Mars/Olympus')).toBe(false);
    expect(isKnownTimeZone('Europe/Paris')).toBe(true);
  });
});
