import { Counter, Gauge, Registry } from 'prom-client';
import type { SessionService } from '../assistant/session/session.service';
import type { ToolRegistryService } from '../core/tools/tool-registry.service';
import type { ConnectionRegistry } from '../core/ws/connection-registry';
import type { ProtocolRegistry } from '../core/protocols/protocol-registry';
import type { UpstreamServersService } from '../upstream/upstream-servers.service';
import type { Sdk2Binder } from '../mcp/revisions/2026/sdk2-binder';
import type { RedisPersistenceWatch } from '../core/redis/redis-persistence-watch';
import type { UpstreamStatus } from '../upstream/upstream-connection';

/** Where the scrape-time figures come from; upstreams only when the app has the upstream module. */
export interface ScrapeSources {
  connections: ConnectionRegistry;
  /** The protocols served: their connections are reported, zero included, so dashboards show them. */
  protocols: ProtocolRegistry;
  sessions: SessionService;
  tools: ToolRegistryService;
  upstreams?: UpstreamServersService;
  /** The fleet's devices: online in the directory (every instance), and connected here. */
  fleet?: { online(): number; local(): number };
  modernMcp?: Sdk2Binder;
  /** With `REDIS_URL` only: without Redis there is no Redis persistence to report. */
  redisPersistence?: RedisPersistenceWatch;
}

/**
 * The figures that are state, not events: read from their owners when Prometheus scrapes, so
 * keeping them costs the connection, session and upstream code nothing at all.
 */
export function registerScrapeTimeMetrics(registry: Registry, sources: ScrapeSources): void {
  const upstreamStatuses = (): [string, UpstreamStatus][] => Object.entries(sources.upstreams?.statuses() ?? {});

  new Gauge({
    name: 'gateway_connections',
    help: 'Open WebSocket connections, by protocol',
    labelNames: ['protocol'],
    registers: [registry],
    collect() {
      this.reset();
      const counts = new Map<string, number>(sources.protocols.names().map((protocol) => [protocol, 0]));
      for (const connection of sources.connections.list()) counts.set(connection.protocol, (counts.get(connection.protocol) ?? 0) + 1);
      for (const [protocol, count] of counts) this.labels(protocol).set(count);
    },
  });
  new Gauge({
    name: 'gateway_sessions',
    help: 'LLM-gateway sessions held by connections of this instance',
    registers: [registry],
    collect() {
      this.set(sources.sessions.attachedCount);
    },
  });
  new Gauge({
    name: 'gateway_tool_calls_running',
    help: 'Tool calls running now that did not answer at once: on the server, upstream, or waiting for a device',
    registers: [registry],
    collect() {
      this.set(sources.tools.callsRunning);
    },
  });
  new Gauge({
    name: 'gateway_mcp_socket_servers',
    help: 'MCP 2026-07-28 servers of WebSocket connections: one for each open connection that spoke that revision',
    registers: [registry],
    collect() {
      this.set(sources.modernMcp?.socketServers ?? 0);
    },
  });
  new Gauge({
    name: 'gateway_devices',
    help: 'Devices online in the fleet directory, on every instance sharing its Redis',
    registers: [registry],
    collect() {
      this.set(sources.fleet?.online() ?? 0);
    },
  });
  new Gauge({
    name: 'gateway_devices_local',
    help: 'Devices whose socket this instance holds',
    registers: [registry],
    collect() {
      this.set(sources.fleet?.local() ?? 0);
    },
  });
  new Gauge({
    name: 'gateway_upstream_up',
    help: 'Upstream MCP servers: 1 connected, 0 not (disabled ones are left out)',
    labelNames: ['server'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [server, status] of upstreamStatuses()) {
        if (status.state !== 'disabled') this.labels(server).set(status.state === 'connected' ? 1 : 0);
      }
    },
  });
  const { redisPersistence } = sources;
  if (redisPersistence) {
    new Gauge({
      name: 'gateway_redis_persistent',
      help: "Whether a restart of the gateway's Redis keeps reminders, held pushes and sessions: 1 AOF or RDB snapshots on, 0 neither, -1 Redis would not say",
      registers: [registry],
      collect() {
        const { persistent } = redisPersistence;
        this.set(persistent === undefined ? -1 : Number(persistent));
      },
    });
  }
  new Counter({
    name: 'gateway_upstream_reconnects_total',
    help: 'Times an upstream MCP server came back after a loss or a failed start',
    labelNames: ['server'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [server, status] of upstreamStatuses()) this.labels(server).inc(status.reconnects);
    },
  });
}
