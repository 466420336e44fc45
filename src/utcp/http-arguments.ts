import type { Request } from 'express';
import { GatewayError, GatewayErrorCode } from '../core/errors/gateway-error';
import { HTTP_BODY_FIELD } from './utcp.frames';

/** Query parameters of `POST /utcp/<tool>` that are the gateway's, not a tool's: the token and the stream switch. */
const GATEWAY_PARAMETERS = new Set(['token', 'stream']);

/** How many misplaced names an error message lists, and how much of each. */
const NAMES_SHOWN = 10;
const NAME_LENGTH_SHOWN = 64;

function queryNames(url: string): string[] {
  const query = url.indexOf('?');
  return query < 0 ? [] : [...new Set(new URLSearchParams(url.slice(query + 1)).keys())];
}

/** Whether the request came with a body at all (the JSON parser leaves `body` unset for other content types). */
function hasBody(request: Request): boolean {
  return request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length'] ?? 0) > 0;
}

/**
 * A call's arguments on `POST /utcp/<tool>`: the JSON request body, or `{}` when there is none
 * (a tool without required arguments). `@utcp/http` sends every argument but the template's
 * `body_field` as a query parameter, so arguments found in the query mean a caller that left
 * them outside `body`: refused with a message that says so, rather than run with some missing.
 * Whether the body fits the tool is the catalogue's check, as on every other route.
 */
export function httpArgumentsOf(request: Request): unknown {
  const misplaced = queryNames(request.url).filter((name) => !GATEWAY_PARAMETERS.has(name));
  if (misplaced.length > 0) {
    const shown = misplaced.slice(0, NAMES_SHOWN).map((name) => name.slice(0, NAME_LENGTH_SHOWN));
    throw new GatewayError(
      GatewayErrorCode.INVALID_TOOL_PARAMETERS,
      `Arguments go in the JSON request body (the manual's "${HTTP_BODY_FIELD}" input), not in the query: ${shown.join(', ')}${misplaced.length > NAMES_SHOWN ? ', ...' : ''}`,
    );
  }
  if (request.body !== undefined) return request.body;
  if (hasBody(request)) {
    throw new GatewayError(GatewayErrorCode.INVALID_MESSAGE, 'Send the arguments as a JSON object, with Content-Type: application/json');
  }
  return {};
}
