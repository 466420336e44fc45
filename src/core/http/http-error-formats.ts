import { Injectable } from '@nestjs/common';
import type { Request } from 'express';
import type { DescribedError } from '../errors/describe-exception';

/** Turns a failure on a protocol's HTTP route into that protocol's error body. */
export type HttpErrorFormatter = (error: DescribedError, request: Request) => unknown;

/**
 * Each protocol's HTTP error body, by path prefix. Failures can happen before any controller
 * runs (an unparseable body, a body over the size limit), where only a global filter sees them,
 * so the protocols register their format here rather than in controller-scoped filters.
 */
@Injectable()
export class HttpErrorFormats {
  private readonly formats: [prefix: string, format: HttpErrorFormatter][] = [];

  register(pathPrefix: string, format: HttpErrorFormatter): void {
    this.formats.push([pathPrefix, format]);
    this.formats.sort(([a], [b]) => b.length - a.length);
  }

  format(error: DescribedError, request: Request): unknown {
    const match = this.formats.find(([prefix]) => request.path.startsWith(prefix));
    return match ? match[1](error, request) : { error: { code: error.code, message: error.message, ...error.fields } };
  }
}
