import { parse } from 'dotenv';
import { existsSync, readFileSync } from 'fs';
import { join } from 'path';
import { defaultCell, GENERATED_FILES, REGENERATE_COMMAND, renderConfigurationDoc, renderEnvExample, settingsReference } from '../../scripts/config-docs';
import { ENVIRONMENT_VARIABLE_NAMES } from './environment';
import { loadGatewayConfig } from './gateway-config';

const ROOT = join(__dirname, '..', '..');
const read = (path: string): string => (existsSync(join(ROOT, path)) ? readFileSync(join(ROOT, path), 'utf8') : '');

describe('the configuration reference and .env.example, generated from the settings class', () => {
  it.each(Object.keys(GENERATED_FILES))('%s is up to date', (path) => {
    const expected = GENERATED_FILES[path]().split('\n');
    const actual = read(path).split('\n');
    const line = expected.findIndex((text, index) => actual[index] !== text);
    if (line !== -1 || actual.length !== expected.length) {
      const where = line === -1 ? `it has ${actual.length} lines, not ${expected.length}` : `line ${line + 1} differs`;
      throw new Error(`${path} is stale (${where}): run \`${REGENERATE_COMMAND}\` after changing src/config/environment.ts`);
    }
  });

  it('documents every setting in both files', () => {
    const doc = renderConfigurationDoc();
    const env = parse(renderEnvExample());
    for (const name of ENVIRONMENT_VARIABLE_NAMES) expect(doc).toContain(`| \`${name}\` |`);
    expect(Object.keys(env).sort()).toEqual([...ENVIRONMENT_VARIABLE_NAMES].sort());
  });

  it('writes in .env.example the defaults the gateway itself uses', () => {
    expect(loadGatewayConfig(parse(renderEnvExample()))).toEqual(loadGatewayConfig({}));
  });

  it('reads type, unit, default and allowed values from the validation', () => {
    const byName = new Map(settingsReference().map((setting) => [setting.name, setting]));
    expect(byName.get('CLOUD_PORT')).toMatchObject({ group: 'server', type: 'integer', default: '9400', allowed: '0 to 65535' });
    expect(byName.get('WS_UNAUTHENTICATED_MAX_BYTES')).toMatchObject({ type: 'integer', unit: 'bytes', default: '65536', allowed: '1024 or more' });
    expect(byName.get('CLOUD_LOG_FORMAT')).toMatchObject({ type: 'string', allowed: '`json`, `text`' });
    expect(byName.get('REDIS_URL')).toMatchObject({ default: undefined, unset: 'sessions in memory', allowed: 'a redis:// or rediss:// URL' });
    expect(byName.get('MCP_PROTOCOL_VERSION')!.allowed).toMatch(/^one of .*2024-11-05/);
    expect(byName.get('DEFAULT_TIMEZONE')!.allowed).toBe('an IANA time zone such as Europe/Paris');
  });

  it("keeps README's short table in step with the reference, and links to it", () => {
    const readme = read('README.md');
    const section = /\n## Configuration\n([\s\S]*?)(?=\n## |$)/.exec(readme)?.[1];
    expect(section).toBeDefined();
    expect(section).toContain('](docs/configuration.md)');
    const byName = new Map(settingsReference().map((setting) => [setting.name, setting]));
    const rows = [...section!.matchAll(/^\| `([A-Z0-9_]+)` \| (.+?) \| /gm)];
    expect(rows.length).toBeGreaterThan(5);
    for (const [, name, shown] of rows) {
      const setting = byName.get(name);
      expect({ name, known: setting !== undefined }).toEqual({ name, known: true });
      expect({ name, default: shown }).toEqual({ name, default: defaultCell(setting!) });
    }
  });
});
