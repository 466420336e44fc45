import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { ApplicationConfig } from '@nestjs/core';
import { createServer, IncomingMessage, Server, ServerResponse } from 'http';
import { limitRequestHeaders } from '../../../core/http/request-header-deadline';
import { GATEWAY_CONFIG, GatewayConfig } from '../../../config/gateway-config';
import { StartupError } from '../../../shared/startup-error';
import { GatewayWsAdapter } from '../../../core/ws/gateway-ws.adapter';
import { MCP_PATH } from '../../mcp.constants';

/** The listener speaks WebSocket only; a plain HTTP request is told so. */
function upgradeRequired(_request: IncomingMessage, response: ServerResponse): void {
  const body = JSON.stringify({ error: { status: 426, message: `This port serves MCP over WebSocket only (ws://<host>:<port>${MCP_PATH})` } });
  response.writeHead(426, { 'Content-Type': 'application/json', Upgrade: 'websocket', Connection: 'close' }).end(body);
}

/**
 * The MCP-over-WebSocket spec's own listener (`MCP_WS_HOST:MCP_WS_PORT`, 127.0.0.1:8765; port 0
 * turns it off), serving the same `/mcp` gateway as the main port, at `/` (where the spec's
 * client connects) and at `/mcp`. The adapter routes its upgrades and closes it at shutdown.
 */
@Injectable()
export class McpDedicatedListener implements OnApplicationBootstrap {
  private readonly logger = new Logger('MCP');

  constructor(
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
    private readonly application: ApplicationConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const { enabled, ws } = this.config.mcp;
    const adapter = this.application.getIoAdapter();
    // An application context (the stdio command, a testing module) has no WebSocket server to extend.
    if (!enabled || ws.port === 0 || !adapter) return;
    if (!(adapter instanceof GatewayWsAdapter)) {
      throw new Error("The dedicated MCP listener needs the gateway's WebSocket adapter: create the app with createGatewayApp()");
    }
    const server = createServer(upgradeRequired);
    limitRequestHeaders(server, this.config.server.requestHeaders);
    adapter.attachServer(server, MCP_PATH, ['/', MCP_PATH]);
    await listen(server, ws.port, ws.host);
    this.logger.log(`MCP over WebSocket also on ws://${ws.host}:${ws.port}/ (MCP_WS_PORT; 0 turns it off)`);
  }
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', (error) =>
      reject(
        new StartupError(`MCP_WS_PORT: cannot listen on ${host}:${port} (${error.message}); choose another port, or 0 to turn the dedicated MCP listener off`),
      ),
    );
    server.listen(port, host, () => resolve());
  });
}
