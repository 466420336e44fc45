import { Inject, Injectable } from '@nestjs/common';
import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import { isLegacyRequest } from '@modelcontextprotocol/server';
import type { Request as ExpressRequest, Response as ExpressResponse } from 'express';
import { Readable } from 'stream';
import { pipeline } from 'stream/promises';
import type { ReadableStream as WebReadableStream } from 'stream/web';
import { GATEWAY_CONFIG, GatewayConfig } from '../../../config/gateway-config';
import { ANONYMOUS_PRINCIPAL } from '../../../core/auth/access-token.service';
import { EventStreamLimits, eventStreamLimits, keepEventStream } from '../../../core/http/event-stream';
import { modernEnvelopeOf } from '../../revisions/2026/request-meta';
import { Sdk2Binder } from '../../revisions/2026/sdk2-binder';

/**
 * MCP's 2026-07-28 revision over Streamable HTTP on `/mcp`, beside the 2025 sessions: each POST
 * that carries the revision's envelope is answered on its own by the revision's binder (the SDK's
 * `createMcpHandler`), its event stream kept alive and bounded as every event stream of the
 * gateway is. Requests that carry no 2026 envelope are left to the sessions ({@link claims}).
 */
@Injectable()
export class ModernHttpRequests {
  private readonly limits: EventStreamLimits;

  constructor(
    @Inject(GATEWAY_CONFIG) config: GatewayConfig,
    private readonly binder: Sdk2Binder,
  ) {
    this.limits = eventStreamLimits(config);
  }

  /**
   * Whether `request` is the 2026 revision's to answer: it names a revision the 2025 sessions do
   * not speak, or carries the revision's `_meta` envelope, and the SDK classifies it modern. Other
   * requests are the sessions' to answer, with their own checks (an unreadable id, a bad body).
   */
  async claims(request: ExpressRequest): Promise<boolean> {
    if (request.method !== 'POST' || !namesModernRevision(request)) return false;
    return !(await isLegacyRequest(webRequestOf(request), request.body));
  }

  /** Answers one 2026 request, as the principal the guards authenticated; its client going away stops what it asked for. */
  async serve(request: ExpressRequest & { principal?: string }, response: ExpressResponse): Promise<void> {
    const client = new AbortController();
    response.once('close', () => client.abort());
    const answer = await this.binder.fetch(webRequestOf(request, client.signal), request.body, request.principal ?? ANONYMOUS_PRINCIPAL);
    keepEventStream(response, this.limits);
    response.writeHead(answer.status, Object.fromEntries(answer.headers));
    if (!answer.body) {
      response.end();
      return;
    }
    await pipeline(Readable.fromWeb(answer.body as WebReadableStream), response).catch(() => undefined);
  }
}

/** A protocol version header the 2025 sessions do not speak, or the 2026 envelope in a message. */
function namesModernRevision(request: ExpressRequest): boolean {
  const header = request.headers['mcp-protocol-version'];
  if (typeof header === 'string' && !SUPPORTED_PROTOCOL_VERSIONS.includes(header)) return true;
  const messages: unknown[] = Array.isArray(request.body) ? request.body : [request.body];
  return messages.some((message) => modernEnvelopeOf(message) !== undefined);
}

/** The Fetch API's view of an Express request whose body Express has read already (it goes to the SDK as `parsedBody`). */
function webRequestOf(request: ExpressRequest, signal?: AbortSignal): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined) continue;
    for (const each of Array.isArray(value) ? value : [value]) headers.append(name, each);
  }
  return new Request(`http://${request.headers.host ?? 'localhost'}${request.originalUrl}`, { method: request.method, headers, signal });
}
