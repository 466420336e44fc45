import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { createServer, IncomingMessage, Server, ServerResponse } from 'http';
import { limitRequestHeaders } from '../core/http/request-header-deadline';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';
import { StartupError } from '../shared/startup-error';
import { MetricsService } from './metrics.service';

/**
 * `/metrics` on a listener of its own (`METRICS_HOST:METRICS_PORT`), for deployments that keep
 * scraping off the public port: it serves nothing else and asks for no token, so it belongs on
 * loopback or a private network. Node's plain HTTP server: one route needs no framework.
 */
@Injectable()
export class MetricsListener implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Metrics');
  private server?: Server;

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    private readonly metrics: MetricsService,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const { port, host } = this.config.metrics;
    if (port === 0) return;
    const server = createServer((request, response) => void this.answer(request, response));
    limitRequestHeaders(server, this.config.server.requestHeaders);
    await new Promise<void>((resolve, reject) => {
      server.once('error', (error) =>
        reject(
          new StartupError(`METRICS_PORT: cannot listen on ${host}:${port} (${error.message}); choose another port, or 0 to serve /metrics on CLOUD_PORT`),
        ),
      );
      server.listen(port, host, () => resolve());
    });
    this.server = server;
    this.logger.log(`Metrics on http://${host}:${port}/metrics (METRICS_PORT)`);
  }

  async onApplicationShutdown(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  }

  private async answer(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = (request.url ?? '/').split('?')[0];
    if (path !== '/metrics') return void json(response, 404, 'This port serves GET /metrics only');
    if (request.method !== 'GET' && request.method !== 'HEAD') return void json(response, 405, 'Use GET', { Allow: 'GET, HEAD' });
    try {
      const { contentType, body } = await this.metrics.scrape();
      response.writeHead(200, { 'Content-Type': contentType }).end(request.method === 'HEAD' ? undefined : body);
    } catch (error) {
      this.logger.error(`Metrics scrape failed: ${(error as Error)?.stack ?? error}`);
      json(response, 500, 'Internal error');
    }
  }
}

function json(response: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  response.writeHead(status, { 'Content-Type': 'application/json', ...headers }).end(JSON.stringify({ error: { status, message } }));
}
