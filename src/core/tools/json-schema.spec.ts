import { setFlagsFromString } from 'v8';
import { runInNewContext } from 'vm';
import { JsonSchemaCompiler } from './json-schema';

/** A full garbage collection, without starting jest with --expose-gc. */
function collectGarbage(): void {
  setFlagsFromString('--expose_gc');
  (runInNewContext('gc') as () => void)();
}

describe('JsonSchemaCompiler', () => {
  const compiler = new JsonSchemaCompiler();

  it('accepts object schemas and refuses what cannot describe an arguments object', () => {
    expect(compiler.inputSchemaProblem({ type: 'object', properties: { a: { type: 'number' } } })).toBeUndefined();
    expect(compiler.inputSchemaProblem({ properties: {} })).toBeUndefined();
    expect(compiler.inputSchemaProblem({ type: 'string' })).toMatch(/must describe an object/);
    expect(compiler.inputSchemaProblem([])).toMatch(/JSON Schema object/);
    expect(compiler.inputSchemaProblem(null)).toMatch(/JSON Schema object/);
    expect(compiler.inputSchemaProblem({ type: 'object', properties: { a: { type: 'nonsense' } } })).toMatch(/Invalid JSON Schema/);
    expect(compiler.inputSchemaProblem({ type: 'object', required: 'a' })).toMatch(/Invalid JSON Schema/);
  });

  it('explains failures argument by argument', () => {
    const check = compiler.compile({
      type: 'object',
      properties: { a: { type: 'number' }, op: { enum: ['add', 'sub'] }, nested: { type: 'object', properties: { x: { type: 'integer' } } } },
      required: ['a'],
      additionalProperties: false,
    });
    expect(check({ a: 1, op: 'add' })).toBeUndefined();
    expect(check({})).toBe('missing required argument "a"');
    expect(check({ a: 'x' })).toBe('argument "a" must be number');
    expect(check({ a: 1, op: 'mul' })).toBe('argument "op" must be one of: "add", "sub"');
    expect(check({ a: 1, extra: true })).toBe('unexpected argument "extra"');
    expect(check({ a: 1, nested: { x: 1.5 } })).toBe('argument "nested.x" must be integer');
    expect(check({ a: 'x', extra: 1 })).toContain(';');
  });

  it('fills in declared defaults', () => {
    const check = compiler.compile({ type: 'object', properties: { op: { type: 'string', default: 'add' } } });
    const args: Record<string, unknown> = {};
    expect(check(args)).toBeUndefined();
    expect(args.op).toBe('add');
  });

  it('understands draft 2020-12 schemas and known formats', () => {
    const check = compiler.compile({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: { when: { type: 'string', format: 'date' }, pair: { type: 'array', prefixItems: [{ type: 'number' }] } },
    });
    expect(check({ when: '2026-11-21', pair: [1] })).toBeUndefined();
    expect(check({ when: 'tomorrow' })).toMatch(/must match format "date"/);
    expect(check({ pair: ['x'] })).toMatch(/pair.0/);
  });

  it('lets two schemas share an $id', () => {
    const schema = { $id: 'urn:same', type: 'object', properties: { a: { type: 'number' } } };
    const first = compiler.compile(schema);
    const second = compiler.compile({ ...schema, properties: { a: { type: 'string' } } });
    expect(first({ a: 1 })).toBeUndefined();
    expect(second({ a: 'x' })).toBeUndefined();
  });

  it('matches patterns in linear time, so a catastrophic pattern costs nothing', () => {
    const check = compiler.compile({
      type: 'object',
      properties: { s: { type: 'string', pattern: '^(a+)+$' } },
      patternProperties: { '^(x+x+)+y$': { type: 'number' } },
    });
    const started = process.hrtime.bigint();
    expect(check({ s: `${'a'.repeat(5000)}!` })).toMatch(/argument "s" must match pattern/);
    expect(check({ s: 'aaaa', [`${'x'.repeat(5000)}y`]: 'no' })).toMatch(/must be number/);
    // The native engine takes seconds on 30 characters; linear matching takes well under a second on 5,000.
    expect(Number(process.hrtime.bigint() - started) / 1e6).toBeLessThan(1000);
    expect(check({ s: 'aaa' })).toBeUndefined();
  });

  it('refuses patterns a linear-time engine cannot run, saying why', () => {
    expect(() => compiler.compile({ type: 'object', properties: { s: { type: 'string', pattern: '(a)\\1' } } })).toThrow(
      /pattern "\(a\)\\\\1" is not supported.*backreferences/,
    );
    expect(() => compiler.compile({ type: 'object', properties: { s: { type: 'string', pattern: '(?<=a)b' } } })).toThrow(/lookaround/);
  });

  it('refuses schemas over the size or depth budget', () => {
    const small = new JsonSchemaCompiler({ maxBytes: 200, maxDepth: 4 });
    expect(small.inputSchemaProblem({ type: 'object', description: 'x'.repeat(300) })).toMatch(/over the limit of 200/);
    expect(small.inputSchemaProblem({ type: 'object', properties: { a: { type: 'object', properties: { b: { type: 'string' } } } } })).toMatch(/deeper than 4/);
    expect(small.inputSchemaProblem({ type: 'object', properties: { a: { type: 'string' } } })).toBeUndefined();
  });

  it('keeps nothing of a schema once its validator is dropped', () => {
    const round = (index: number) => {
      const schema = { type: 'object', properties: { [`p${index}`]: { type: 'string', pattern: `^a${index}$`, description: 'x'.repeat(64) } } };
      compiler.compile(schema)({});
    };
    for (let index = 0; index < 300; index += 1) round(index);
    collectGarbage();
    const before = process.memoryUsage().heapUsed;
    for (let index = 300; index < 3300; index += 1) round(index);
    collectGarbage();
    // One shared ajv kept 6.4 KB a schema: 19 MB here.
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(2_000_000);
  });

  it('throws when a schema cannot be compiled', () => {
    expect(() => compiler.compile({ type: 'object', properties: { a: { $ref: '#/definitions/missing' } } })).toThrow();
  });
});
