import { systemTimeZone } from '../../shared/time-zone';

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

/** How many zones keep their formatter: every model call reads the clock, usually in one or two zones. */
const FORMATTERS_KEPT = 32;
const formatters = new Map<string, Intl.DateTimeFormat>();

/**
 * The formatter of `zone`, built once: building one costs a third of a millisecond, more than
 * all the rest of a system prompt. The most recently used zones are kept, the oldest dropped.
 */
function formatterFor(zone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(zone);
  if (formatter) {
    formatters.delete(zone);
  } else {
    formatter = new Intl.DateTimeFormat('en-US', {
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
    });
    if (formatters.size >= FORMATTERS_KEPT) formatters.delete(formatters.keys().next().value!);
  }
  formatters.set(zone, formatter);
  return formatter;
}

/** Reads `moment` in `zone` (an IANA name; the machine's zone when omitted). Throws RangeError for an unknown zone. */
export function zonedTime(moment: Date, zone: string = systemTimeZone()): ZonedTime {
  const parts = Object.fromEntries(
    formatterFor(zone)
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
