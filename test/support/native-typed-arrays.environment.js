/**
 * Jest's node environment for specs that run a native addon handing back typed arrays
 * (onnxruntime-node): the addon makes them in Node's own realm, whose Float32Array is not the
 * test sandbox's, so onnxruntime's own `instanceof Float32Array` check fails inside Jest alone.
 * The sandbox is given Node's typed-array constructors, as plain Node has.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- Jest loads environments as CommonJS
const { TestEnvironment } = require('jest-environment-node');

const TYPED_ARRAYS = [
  'Float32Array',
  'Float64Array',
  'Int8Array',
  'Int16Array',
  'Int32Array',
  'Uint8Array',
  'Uint16Array',
  'Uint32Array',
  'Uint8ClampedArray',
  'BigInt64Array',
  'BigUint64Array',
  'ArrayBuffer',
];

module.exports = class NativeTypedArraysEnvironment extends TestEnvironment {
  constructor(config, context) {
    super(config, context);
    for (const name of TYPED_ARRAYS) this.global[name] = globalThis[name];
  }
};
