import { Controller, Get, NotFoundException, Param, Res, UseGuards } from '@nestjs/common';
import type { Response } from 'express';
import { Public } from '../core/auth/route-access';
import { CONSOLE_PAGE, ConsoleAssets } from './console-assets';
import { ConsoleEnabledGuard } from './console-enabled.guard';

/**
 * What the page may load: its own files only, nothing inline, so the only code that ever runs
 * is the console's (tool descriptions and frames are shown as text, never as HTML). It may
 * connect to any gateway the user names in its URL field, over WebSocket and HTTP (the
 * catalogue, LiteMCP calls): limiting connect-src would not protect anything, since no foreign
 * script runs to misuse it, and a gateway's own origin check (ALLOWED_ORIGINS) decides whether
 * it answers a page of this origin at all.
 */
const PAGE_POLICY = [
  "default-src 'self'",
  "connect-src 'self' ws: wss: http: https:",
  "img-src 'self' data:",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * The web test console: the page at `GET /` and `GET /console`, its files under `/console/`.
 * WebSocket upgrades to `/` never get here: the WebSocket adapter takes them to the LLM gateway.
 * The files are public (they hold no data); what the page reads needs the token it is given.
 */
@Controller()
@Public()
@UseGuards(ConsoleEnabledGuard)
export class ConsoleController {
  constructor(private readonly assets: ConsoleAssets) {}

  @Get(['', 'console'])
  page(@Res() response: Response): void {
    response.setHeader('Content-Security-Policy', PAGE_POLICY);
    response.setHeader('Referrer-Policy', 'no-referrer');
    this.send(response, CONSOLE_PAGE);
  }

  @Get('console/*path')
  asset(@Param('path') path: string[], @Res() response: Response): void {
    this.send(response, path.join('/'));
  }

  private send(response: Response, path: string): void {
    const file = this.assets.fileAt(path);
    if (!file) throw new NotFoundException(`No console file at /console/${path}`);
    response.setHeader('X-Content-Type-Options', 'nosniff');
    response.setHeader('Cache-Control', 'no-cache');
    response.sendFile(file);
  }
}
