import { ArgumentsHost, Catch, ExceptionFilter, Injectable, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { describeException } from '../errors/describe-exception';
import { RateLimitedError } from '../limits/rate-limited.error';
import { HttpErrorFormats } from './http-error-formats';

/**
 * The one HTTP exception filter: every failure on an HTTP route, body parsing included, gets a
 * status and the body format of the protocol that owns the path (see {@link HttpErrorFormats}).
 */
@Catch()
@Injectable()
export class GatewayHttpExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('HTTP');

  constructor(private readonly formats: HttpErrorFormats) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    if (host.getType() !== 'http') return;
    const http = host.switchToHttp();
    const request = http.getRequest<Request>();
    const response = http.getResponse<Response>();
    const described = describeException(exception, this.logger);
    if (response.headersSent) return;
    if (described.status === 401 && !response.hasHeader('WWW-Authenticate')) response.setHeader('WWW-Authenticate', 'Bearer');
    // A body left unread (a refused token, a route that never reads it) is not drained for the next request: the connection closes.
    if (!request.complete) response.setHeader('Connection', 'close');
    if (exception instanceof RateLimitedError) response.setHeader('Retry-After', String(exception.retryAfterS));
    response.status(described.status).json(this.formats.format(described, request));
  }
}
