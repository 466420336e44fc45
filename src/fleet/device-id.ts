/**
 * A device's id, as it names itself at the upgrade: 1-62 letters, digits, `_`, `-` and `:` (a MAC
 * address `AA:BB:CC:DD:EE:FF` fits, so do UUIDs and names like `kitchen-speaker`), never `__`,
 * and not ending in `_`. Those two rules keep the agent-facing tool name
 * `<device>__<tool>` reversible: the first `__` is where the device ends.
 */
const DEVICE_ID = /^[A-Za-z0-9_:-]{1,62}$/;

/** The header a device names itself with, and the query parameter for clients that cannot set headers. */
export const DEVICE_ID_HEADER = 'device-id';
export const DEVICE_ID_PARAMETER = 'device_id';

/** Why `id` is not a device id, or `undefined` when it is one. */
export function deviceIdProblem(id: unknown): string | undefined {
  if (typeof id !== 'string' || !DEVICE_ID.test(id)) {
    return 'A device id is 1-62 letters, digits, "_", "-" or ":" (a MAC address such as AA:BB:CC:DD:EE:FF fits)';
  }
  if (id.includes('__') || id.endsWith('_')) return 'A device id must not contain "__" or end with "_"';
  return undefined;
}

/** A glob over device ids (`kitchen-*`, `AA:BB:*`): their characters, and at least one `*`. */
const DEVICE_GLOB = /^[A-Za-z0-9_:*-]{1,128}$/;

export function isDeviceGlob(value: unknown): value is string {
  return typeof value === 'string' && value.includes('*') && DEVICE_GLOB.test(value);
}

/**
 * The name agents see a device's tool by: the device id with `:` written `.`, then `__`, then the
 * tool's own name (`AA.BB.CC.DD.EE.FF__light_on`). Every character is one that MCP (SEP-986),
 * UTCP, LiteMCP's URL paths and the LLM spec's tool names allow, `-` aside, and it reads back to
 * one device and one tool.
 */
export function agentToolName(deviceId: string, toolName: string): string {
  return `${deviceId.replaceAll(':', '.')}__${toolName}`;
}

/** The device and tool an agent-facing name stands for, or `undefined` for a name that is no device tool's. */
export function parseAgentToolName(name: string): { deviceId: string; toolName: string } | undefined {
  const separator = name.indexOf('__');
  if (separator <= 0) return undefined;
  const deviceId = name.slice(0, separator).replaceAll('.', ':');
  const toolName = name.slice(separator + 2);
  if (toolName === '' || deviceIdProblem(deviceId) !== undefined) return undefined;
  return { deviceId, toolName };
}
