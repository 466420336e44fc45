import { isIP } from 'net';

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '::1']);

/** Whether a name or address is this machine's loopback (`localhost`, `*.localhost`, 127/8, ::1). */
export function isLoopbackHost(hostname: string): boolean {
  const name = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (LOOPBACK_NAMES.has(name) || name.endsWith('.localhost')) return true;
  if (name.startsWith('::ffff:')) return isLoopbackHost(name.slice('::ffff:'.length));
  return isIP(name) === 4 && name.startsWith('127.');
}
