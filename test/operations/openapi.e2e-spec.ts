import { readFileSync } from 'fs';
import { join } from 'path';
import { LIMIT_NAMES } from '../../src/core/budgets/budget-meters';
import { SAY_BODY_SCHEMA } from '../../src/fleet/push-request';
import { RunningGateway, startGateway } from '../support/gateway';

const TOKEN = 'openapi-reader-token';
const VERSION = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')).version;

/** Every key anywhere in `value`. */
function keysOf(value: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(value)) value.forEach((item) => keysOf(item, into));
  else if (value && typeof value === 'object')
    for (const [key, child] of Object.entries(value)) {
      into.add(key);
      keysOf(child, into);
    }
  return into;
}

describe('OpenAPI description (GET /openapi.json, Swagger UI at /openapi)', () => {
  let gateway: RunningGateway;

  beforeAll(async () => {
    gateway = await startGateway({ AUTH_TOKENS: TOKEN });
  });

  afterAll(() => gateway.close());

  it('describes the fleet routes from their controllers, with the bodies the validation pipes enforce, and is public', async () => {
    const response = await fetch(gateway.http('/openapi.json'));
    expect(response.status).toBe(200);
    const document = (await response.json()) as any;
    expect(document.openapi).toMatch(/^3\./);
    expect(document.info.version).toBe(VERSION);
    expect(document.components.securitySchemes.bearer).toEqual(expect.objectContaining({ type: 'http', scheme: 'bearer' }));

    const say = document.paths['/devices/{id}/say'].post;
    expect(say.security).toEqual([{ bearer: [] }]);
    expect(say.parameters).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'id', in: 'path', required: true })]));
    const body = say.requestBody.content['application/json'].schema;
    expect(body.required).toEqual([...SAY_BODY_SCHEMA.required]);
    expect(Object.keys(body.properties)).toEqual(Object.keys(SAY_BODY_SCHEMA.properties));
    expect(body.properties.text.example).toBe('Dinner is ready.');
    expect(Object.keys(say.responses)).toEqual(expect.arrayContaining(['401', '404', '429']));
    const budget = document.paths['/devices/{id}/budget'].put.requestBody.content['application/json'].schema;
    expect(Object.keys(budget.properties)).toEqual([...LIMIT_NAMES]);
    for (const path of [
      '/devices',
      '/devices/{id}',
      '/devices/say',
      '/devices/{id}/turns',
      '/devices/{id}/release',
      '/devices/{id}/tools/{tool}',
      '/devices/{id}/usage',
      '/devices/{id}/budget',
      '/devices/activate',
      '/devices/{id}/credential/rotate',
      '/devices/{id}/unbind',
      '/pushes/{id}',
      '/fleet/firmware',
      '/fleet/rollouts/{id}/widen',
    ])
      expect(document.paths).toHaveProperty([path]);
    // Nothing only ajv understands leaks into the description.
    expect(keysOf(document).has('errorMessage')).toBe(false);
  });

  it('serves Swagger UI, while every route it describes keeps its own guard', async () => {
    const ui = await fetch(gateway.http('/openapi'));
    expect(ui.status).toBe(200);
    expect(ui.headers.get('content-type')).toMatch(/text\/html/);
    expect(await ui.text()).toContain('swagger');
    const unauthenticated = await fetch(gateway.http('/devices/kitchen/say'), {
      method: 'POST',
      body: '{"text":"hi"}',
      headers: { 'content-type': 'application/json' },
    });
    expect(unauthenticated.status).toBe(401);
  });

  it('is off with OPENAPI_ENABLED=false', async () => {
    const off = await startGateway({ AUTH_TOKENS: TOKEN, OPENAPI_ENABLED: false });
    try {
      expect((await fetch(off.http('/openapi.json'))).status).toBe(404);
      expect((await fetch(off.http('/openapi'))).status).toBe(404);
    } finally {
      await off.close();
    }
  });
});
