import { Injectable } from '@nestjs/common';
import { HealthIndicatorResult, HealthIndicatorService } from '@nestjs/terminus';
import { UpstreamServersService } from './upstream-servers.service';

/** The upstream MCP servers as terminus indicators, keyed `mcp_upstreams` on both endpoints. */
@Injectable()
export class UpstreamHealthIndicator {
  constructor(
    private readonly indicators: HealthIndicatorService,
    private readonly upstreams: UpstreamServersService,
  ) {}

  /**
   * For `/health`: every upstream's status, and up however they fare. A missing upstream's tools
   * are missing on every instance alike, so sending clients elsewhere would not bring them back.
   */
  report(): HealthIndicatorResult {
    return this.indicators.check('mcp_upstreams').up({ servers: this.upstreams.statuses() });
  }

  /** For `/health/ready`: down while an enabled upstream is not connected, named, since its tools are missing from the catalogue. */
  connected(): HealthIndicatorResult {
    const check = this.indicators.check('mcp_upstreams');
    const servers = Object.fromEntries(Object.entries(this.upstreams.statuses()).map(([name, { state }]) => [name, state]));
    const missing = Object.keys(servers).filter((name) => servers[name] !== 'connected' && servers[name] !== 'disabled');
    return missing.length === 0 ? check.up({ servers }) : check.down({ servers, message: `Not connected: ${missing.join(', ')}` });
  }
}
