import Ajv, { AnySchemaObject, ErrorObject, ValidateFunction } from 'ajv';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

/** A JSON Schema object, as tools declare their input and output. */
export type JsonSchema = Record<string, unknown>;

/** Checks arguments against a compiled schema; returns a readable problem or `undefined`. */
export interface ArgumentsValidator {
  (args: unknown): string | undefined;
  /** Releases the compiled schema (tools added and removed at run time must not leak). */
  dispose(): void;
}

/**
 * Compiles tool schemas with ajv. Draft-07 is the default (what MCP servers and the LLM spec
 * emit); schemas that declare 2019-09/2020-12 get the matching dialect. `$schema` and `$id`
 * are dropped before compiling, so two tools that happen to share an `$id` do not collide.
 */
export class JsonSchemaCompiler {
  private readonly draft07 = this.withFormats(new Ajv(JsonSchemaCompiler.options()));
  private readonly draft2020 = this.withFormats(new Ajv2020(JsonSchemaCompiler.options()));

  private static options() {
    return { allErrors: true, strict: false, useDefaults: true, validateSchema: true } as const;
  }

  private withFormats<T extends Ajv>(ajv: T): T {
    addFormats(ajv);
    return ajv;
  }

  /** Why `schema` cannot describe a tool's arguments, or `undefined` when it can. */
  inputSchemaProblem(schema: unknown): string | undefined {
    if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) {
      return 'Input schema must be a JSON Schema object';
    }
    const type = (schema as JsonSchema).type;
    if (type !== undefined && type !== 'object') {
      return `Input schema must describe an object (type "object"), not ${JSON.stringify(type)}`;
    }
    return this.schemaProblem(schema as JsonSchema);
  }

  /** Why `schema` breaks its dialect's meta-schema, or `undefined` when it does not. */
  schemaProblem(schema: JsonSchema): string | undefined {
    const { ajv, body } = this.dialect(schema);
    return ajv.validateSchema(body) ? undefined : `Invalid JSON Schema: ${ajv.errorsText(ajv.errors)}`;
  }

  /** Compiles `schema` into a validator; throws when it cannot be compiled (a dangling `$ref`...). */
  compile(schema: JsonSchema): ArgumentsValidator {
    const { ajv, body } = this.dialect(schema);
    const validate: ValidateFunction = ajv.compile(body);
    const check = ((args: unknown) => (validate(args) ? undefined : describeErrors(validate.errors ?? []))) as ArgumentsValidator;
    check.dispose = () => ajv.removeSchema(body);
    return check;
  }

  private dialect(schema: JsonSchema): { ajv: Ajv; body: AnySchemaObject } {
    const { $schema, $id: _id, ...body } = schema;
    const modern = typeof $schema === 'string' && /(2019-09|2020-12)/.test($schema);
    return { ajv: modern ? this.draft2020 : this.draft07, body };
  }
}

function describePath(instancePath: string): string {
  return instancePath
    .split('/')
    .slice(1)
    .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.');
}

function describeError(error: ErrorObject): string {
  const path = describePath(error.instancePath);
  const where = (name: string) => (path ? `${path}.${name}` : name);
  switch (error.keyword) {
    case 'required':
      return `missing required argument "${where(String(error.params.missingProperty))}"`;
    case 'additionalProperties':
      return `unexpected argument "${where(String(error.params.additionalProperty))}"`;
    case 'enum':
      return `argument "${path}" must be one of: ${(error.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    default:
      return path ? `argument "${path}" ${error.message}` : `arguments ${error.message}`;
  }
}

/** Joins ajv's errors into one readable sentence, without repeats. */
export function describeErrors(errors: ErrorObject[]): string {
  return [...new Set(errors.map(describeError))].join('; ');
}
