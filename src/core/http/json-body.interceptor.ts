import { CallHandler, ExecutionContext, Inject, Injectable, NestInterceptor } from '@nestjs/common';
import { json } from 'express';
import type { Request, RequestHandler, Response } from 'express';
import type { Observable } from 'rxjs';
import { GATEWAY_CONFIG, GatewayConfig } from '../../config/gateway-config';

/**
 * Reads and parses a JSON request body once the route's guards have let the request through,
 * not before: a request without a valid token is refused without its body being read, so bad
 * JSON without a token is a 401 (not a 400) and a flood of large bodies without a token costs no
 * parsing. Nest runs interceptors after guards and before the handler's parameters are read, so
 * `@Body()` and `request.body` see the parsed body as they would with a global body parser.
 * Bodies are bounded by `CLOUD_MAX_MESSAGE_SIZE` (413 past it).
 */
@Injectable()
export class JsonBodyInterceptor implements NestInterceptor {
  private readonly parse: RequestHandler;

  constructor(@Inject(GATEWAY_CONFIG) config: GatewayConfig) {
    this.parse = json({ limit: config.server.maxMessageBytes });
  }

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    if (context.getType() === 'http') {
      const http = context.switchToHttp();
      await new Promise<void>((resolve, reject) =>
        this.parse(http.getRequest<Request>(), http.getResponse<Response>(), (error?: unknown) => (error ? reject(error) : resolve())),
      );
    }
    return next.handle();
  }
}
