import { httpStatusOfToolFailure } from './tool-failure-status';

describe('httpStatusOfToolFailure', () => {
  it.each([
    ['an unknown tool', { code: 'TOOL_NOT_FOUND' }, 404],
    ['arguments the schema refuses', { code: 'INVALID_TOOL_PARAMETERS' }, 400],
    ['an upstream that is down', { code: 'TOOL_UNAVAILABLE' }, 503],
    ['a tool past its time limit', { code: 'TOOL_TIMEOUT' }, 504],
    ['a ToolError', { code: 'TOOL_EXECUTION_FAILED' }, 422],
    ['a ToolError with details of its own', { code: 'TOOL_EXECUTION_FAILED', details: { reading: 3 } }, 422],
    ['a ToolError with details that are not an object', { code: 'TOOL_EXECUTION_FAILED', details: 'DEVICE_OFFLINE' }, 422],
    ['a ToolError naming DEVICE_OFFLINE', { code: 'TOOL_EXECUTION_FAILED', details: { code: 'DEVICE_OFFLINE' } }, 404],
    ['a ToolError naming DEVICE_BUSY', { code: 'TOOL_EXECUTION_FAILED', details: { code: 'DEVICE_BUSY' } }, 429],
    ['a ToolError naming DEVICE_ID_TAKEN', { code: 'TOOL_EXECUTION_FAILED', details: { code: 'DEVICE_ID_TAKEN' } }, 409],
    ['a ToolError naming INVALID_MESSAGE', { code: 'TOOL_EXECUTION_FAILED', details: { code: 'INVALID_MESSAGE' } }, 400],
    ['a ToolError naming TOOL_EXECUTION_FAILED itself', { code: 'TOOL_EXECUTION_FAILED', details: { code: 'TOOL_EXECUTION_FAILED' } }, 422],
    ['a ToolError naming a code the gateway does not have', { code: 'TOOL_EXECUTION_FAILED', details: { code: 'toString' } }, 422],
    ['a fault of the handler', { code: 'TOOL_EXECUTION_FAILED', internal: true }, 500],
    ['a fault, whatever details say', { code: 'TOOL_EXECUTION_FAILED', details: { code: 'DEVICE_OFFLINE' }, internal: true }, 500],
  ] as const)('answers %s with %i', (_name, failure, status) => {
    expect(httpStatusOfToolFailure(failure)).toBe(status);
  });
});
