import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import type { SchemaObject } from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
import type { GatewayConfig } from '../../config/gateway-config';
import { GATEWAY_VERSION } from '../version';

/** Where the description is served: the JSON at `/openapi.json`, Swagger UI at `/openapi`. */
export const OPENAPI_UI_PATH = 'openapi';
export const OPENAPI_JSON_PATH = '/openapi.json';

/** The name routes behind the bearer check refer to (`@ApiBearerAuth(BEARER_SCHEME)`). */
export const BEARER_SCHEME = 'bearer';

/**
 * The OpenAPI description of every HTTP route of the app, the gateway's and those of modules an
 * app adds, read from the controllers by `@nestjs/swagger` when the app is made: routes are
 * described where they are declared (`@ApiTags`, `@ApiBody` from the same JSON schemas the
 * validation pipes enforce), so the description cannot drift from the code.
 */
export function openApiDocument(app: INestApplication): OpenAPIObject {
  const builder = new DocumentBuilder()
    .setTitle('voice-tool-gateway')
    .setDescription(
      'The HTTP routes of the gateway: the fleet of devices (`/devices`), tool catalogues, LiteMCP, UTCP, health and metrics. ' +
        'WebSocket protocols are described by the AsyncAPI document in docs/.',
    )
    .setVersion(GATEWAY_VERSION)
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'A token of AUTH_TOKENS, AUTH_TOKENS_FILE or an OIDC access token' }, BEARER_SCHEME);
  return SwaggerModule.createDocument(app, builder.build());
}

/**
 * Serves the description (`OPENAPI_ENABLED`, on by default). Like the console it is public: it
 * shows the routes' shapes, none of their data, and every route it describes keeps its own guard.
 */
export function serveOpenApi(app: INestApplication, config: GatewayConfig): void {
  if (!config.openApi.enabled) return;
  SwaggerModule.setup(OPENAPI_UI_PATH, app, () => openApiDocument(app), {
    jsonDocumentUrl: OPENAPI_JSON_PATH,
    raw: ['json'],
    customSiteTitle: 'voice-tool-gateway HTTP API',
  });
}

type JsonSchemaNode = { [key: string]: unknown };

/**
 * A JSON Schema the validation pipes enforce, as an OpenAPI 3.0 schema: without the keywords of
 * ajv-errors (`errorMessage`), and with the first of `examples` as `example`.
 */
export function openApiSchema(schema: object): SchemaObject {
  const convert = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(convert);
    if (node === null || typeof node !== 'object') return node;
    const out: JsonSchemaNode = {};
    for (const [key, value] of Object.entries(node)) {
      if (key === 'errorMessage') continue;
      if (key === 'examples' && Array.isArray(value)) out.example = value[0];
      else out[key] = key === 'properties' || key === 'items' || key === 'additionalProperties' ? convertChildren(key, value) : value;
    }
    return out;
  };
  const convertChildren = (key: string, value: unknown): unknown =>
    key === 'properties' && value && typeof value === 'object'
      ? Object.fromEntries(Object.entries(value).map(([name, child]) => [name, convert(child)]))
      : convert(value);
  return convert(schema) as SchemaObject;
}

/** The body of every HTTP error: `{"error": {"code", "message"}}`. */
export const ERROR_BODY_SCHEMA: SchemaObject = {
  type: 'object',
  properties: {
    error: {
      type: 'object',
      properties: {
        code: { type: 'string', example: 'DEVICE_OFFLINE' },
        message: { type: 'string' },
        push_id: { type: 'string', description: "A refused push's id: its receipt (GET /pushes/<push_id>) says refused" },
      },
      required: ['code', 'message'],
    },
  },
  required: ['error'],
};
