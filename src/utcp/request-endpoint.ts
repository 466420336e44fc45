import type { IncomingMessage } from 'http';
import type { TLSSocket } from 'tls';
import { queryParameter } from '../core/http/query-parameter';

/** Why a `stream` query parameter was refused. */
export const STREAM_PARAMETER_PROBLEM = 'The "stream" query parameter must be "true" or "false" (or 1 / 0)';

const HOST = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?$/;
/** Path segments of a forwarded prefix; no `$`, which UTCP clients would read as a variable. */
const PREFIX = /^(\/[A-Za-z0-9._~%-]+)*$/;

/** The first value of a header that proxies may have sent as a list (`a, b`) or repeated. */
function firstValue(header: string | string[] | undefined): string | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  const first = value?.split(',')[0].trim();
  return first || undefined;
}

/** Whether the client reached the gateway over TLS: the proxy's word for it, else the connection's own. */
function isSecure(request: IncomingMessage): boolean {
  const forwarded = firstValue(request.headers['x-forwarded-proto'])?.toLowerCase();
  if (forwarded === 'https' || forwarded === 'wss') return true;
  if (forwarded === 'http' || forwarded === 'ws') return false;
  return (request.socket as TLSSocket | undefined)?.encrypted === true;
}

function hostOf(request: IncomingMessage): string {
  for (const candidate of [firstValue(request.headers['x-forwarded-host']), firstValue(request.headers.host)]) {
    if (candidate && HOST.test(candidate)) return candidate;
  }
  const { localAddress = '127.0.0.1', localPort } = request.socket;
  return `${localAddress.includes(':') ? `[${localAddress}]` : localAddress}:${localPort}`;
}

function prefixOf(request: IncomingMessage): string {
  const forwarded = firstValue(request.headers['x-forwarded-prefix']);
  if (!forwarded) return '';
  const prefix = `/${forwarded}`.replace(/\/+/g, '/').replace(/\/$/, '');
  return PREFIX.test(prefix) ? prefix : '';
}

/**
 * Where the client reached the gateway, as a WebSocket base URL (`wss://tools.example.com/gw`):
 * behind a proxy from `X-Forwarded-Proto`, `X-Forwarded-Host` and `X-Forwarded-Prefix`, else
 * from the `Host` header and whether the connection is TLS. Values that are not a plain scheme,
 * host or path are ignored rather than copied into URLs. The headers are taken as given: they
 * only shape the answer to the request that carried them.
 */
export function publicWebSocketBase(request: IncomingMessage): string {
  return `${isSecure(request) ? 'wss' : 'ws'}://${hostOf(request)}${prefixOf(request)}`;
}

/** {@link publicWebSocketBase} for HTTP clients: `https://tools.example.com/gw`, from the same headers. */
export function publicHttpBase(request: IncomingMessage): string {
  return `${isSecure(request) ? 'https' : 'http'}://${hostOf(request)}${prefixOf(request)}`;
}

/** The call template types a manual can be asked for (`?call_template=`), websocket by default. */
export const CALL_TEMPLATE_TYPES = ['websocket', 'http'] as const;
export type ManualCallTemplateType = (typeof CALL_TEMPLATE_TYPES)[number];

/** Why a `call_template` query parameter was refused. */
export const CALL_TEMPLATE_PARAMETER_PROBLEM = 'The "call_template" query parameter must be "websocket" or "http"';

/** The `call_template` query parameter of a request URL: `websocket` when absent, `undefined` when unknown. */
export function callTemplateParameter(url: string | undefined): ManualCallTemplateType | undefined {
  const value = queryParameter(url, 'call_template') ?? 'websocket';
  return (CALL_TEMPLATE_TYPES as readonly string[]).includes(value) ? (value as ManualCallTemplateType) : undefined;
}

/**
 * The `stream` query parameter of a request URL: true for `true`/`1`, false when absent or
 * `false`/`0`, `undefined` for anything else (a mistake worth refusing, not guessing).
 */
export function streamParameter(url: string | undefined): boolean | undefined {
  const value = queryParameter(url, 'stream');
  if (value === null || value === 'false' || value === '0') return false;
  if (value === 'true' || value === '1') return true;
  return undefined;
}
