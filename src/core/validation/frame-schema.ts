import Ajv, { ErrorObject } from 'ajv';
import ajvErrors from 'ajv-errors';
import { LIMITS } from '../llm-contract';

/** A JSON Schema describing one frame (or body) of a protocol, with `errorMessage`s for its answers. */
export type FrameSchema = Readonly<Record<string, unknown>>;

/** Checks a parsed frame; returns the readable problem (every bad field, `; `-joined), or `undefined`. */
export type FrameCheck = (frame: unknown) => string | undefined;

/** How deep a frame may nest, unless its schema says `maxDepth` itself. */
export const FRAME_MAX_DEPTH = LIMITS.frameDepth;

/**
 * Whether `value` nests at most `limit` arrays and objects deep. Iterative, so a frame nested
 * 100,000 deep costs a loop, not the stack; it stops at the first level past the limit.
 */
export function withinDepth(value: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    if (depth > limit) return false;
    const children = Array.isArray(node) ? node : Object.values(node);
    for (const child of children) if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
  }
  return true;
}

/**
 * The one ajv instance for the protocols' own schemas: static, trusted, compiled once each at
 * start-up (tools' schemas, which clients send, have their own compiler in `core/tools`).
 * `allErrors` so a refusal names every bad field, `ajv-errors` for the messages the schemas
 * carry, and `maxDepth` so no frame nests past a bound.
 */
function createAjv(): Ajv {
  const ajv = new Ajv({ allErrors: true, strict: false });
  ajvErrors(ajv);
  ajv.addKeyword({
    keyword: 'maxDepth',
    schemaType: 'number',
    errors: false,
    validate: (limit: number, data: unknown) => withinDepth(data, limit),
  });
  return ajv;
}

const ajv = createAjv();
const compiled = new WeakMap<FrameSchema, FrameCheck>();

/**
 * The check of `schema`, compiled on first use and kept for the life of the process: a frame's
 * validation costs one generated function call, nothing per frame is built or reflected on.
 */
export function compileFrameSchema(schema: FrameSchema): FrameCheck {
  let check = compiled.get(schema);
  if (!check) {
    const validate = ajv.compile({ maxDepth: FRAME_MAX_DEPTH, ...schema });
    check = (frame) => (validate(frame) ? undefined : describeFrameErrors(validate.errors ?? []));
    compiled.set(schema, check);
  }
  return check;
}

function describeFrameError(error: ErrorObject): string {
  if (error.keyword === 'errorMessage') return error.message ?? 'is invalid';
  const path = error.instancePath.split('/').slice(1).join('.');
  if (error.keyword === 'maxDepth') return `${path || 'the message'} nests deeper than ${FRAME_MAX_DEPTH} levels`;
  if (error.keyword === 'required') {
    const missing = String(error.params.missingProperty);
    return `${path ? `${path}.${missing}` : missing} is required`;
  }
  return `${path || 'the message'} ${error.message}`;
}

/** ajv's errors as one line, without repeats. */
export function describeFrameErrors(errors: ErrorObject[]): string {
  return [...new Set(errors.map(describeFrameError))].join('; ');
}
