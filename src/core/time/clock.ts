import { systemTimeZone } from './time-zone';

/** A moment as a voice assistant needs it: the wall-clock reading in one zone, and its offset. */
export interface ZonedTime {
  timezone: string;
  /** ISO 8601 with the zone's offset, e.g. `2026-11-21T18:30:05+08:00`. */
  iso: string;
  date: string;
  time: string;
  weekday: string;
  utc_offset: string;
  unix_ms: number;
}

/** Reads `moment` in `zone` (an IANA name; the machine's zone when omitted). Throws RangeError for an unknown zone. */
export function zonedTime(moment: Date, zone: string = systemTimeZone()): ZonedTime {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
      weekday: 'long',
      timeZoneName: 'longOffset',
    })
      .formatToParts(moment)
      .map((part) => [part.type, part.value]),
  );
  const offset = parts.timeZoneName === 'GMT' ? '+00:00' : parts.timeZoneName.replace('GMT', '');
  const date = `${parts.year}-${parts.month}-${parts.day}`;
  const time = `${parts.hour}:${parts.minute}:${parts.second}`;
  return {
    timezone: zone,
    iso: `${date}T${time}${offset}`,
    date,
    time,
    weekday: parts.weekday,
    utc_offset: offset,
    unix_ms: moment.getTime(),
  };
}
