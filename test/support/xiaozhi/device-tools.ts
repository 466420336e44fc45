import { BoardIdentity, systemInfoJson } from './board-info';
import { JsonObject } from './cjson';

/**
 * The tools of a simulated board, listed as the firmware lists its own: the common tools first
 * (McpServer::AddCommonTools puts them ahead for the model's prompt cache), then the board's,
 * then the user-only tools (AddUserOnlyTools), which `tools/list` hides unless asked
 * `withUserTools`. Descriptions are ours; names and argument schemas are the firmware's.
 */

/** One argument, as the firmware's Property prints it: a type, then `default`, `minimum`, `maximum` when set. */
export interface ToolPropertySchema {
  /** The firmware declares `boolean`, `integer` or `string`; an argument of another type is never found. */
  type: string;
  /** A property with a default is optional: the firmware requires exactly the properties without one. */
  default?: unknown;
  minimum?: number;
  maximum?: number;
  [keyword: string]: unknown;
}

export interface ToolInputSchema {
  type: 'object';
  properties: Record<string, ToolPropertySchema>;
  required?: string[];
}

/** What a tool returns; the firmware sends strings as they are, booleans as "true"/"false", integers in decimal, objects as JSON text. */
export type ToolResult = string | number | boolean | JsonObject;

export interface DeviceTool {
  name: string;
  description: string;
  inputSchema: ToolInputSchema;
  /** Gets the declared arguments only, defaults filled in; a throw becomes a JSON-RPC error with its message. */
  run(args: Record<string, unknown>): ToolResult | Promise<ToolResult>;
  /** How long the tool takes before it runs (the firmware runs tools one at a time on its main task). */
  delayMs?: number;
  /** Hidden from `tools/list` unless `withUserTools`; listed with `annotations.audience: ["user"]`. */
  userOnly?: boolean;
}

/** What the default tools act on, readable by tests. */
export class BoardState {
  /** AudioCodec's output volume at boot. */
  volume = 70;
  rgb = { r: 0, g: 0, b: 0 };
  rebootRequests = 0;
  firmwareUpgradeUrl?: string;
  assetsDownloadUrl?: string;

  /** WifiBoard::GetDeviceStatusJson of a board with a small OLED screen (no backlight, no theme) and no battery. */
  statusJson(): string {
    return JSON.stringify({ audio_speaker: { volume: this.volume }, screen: {}, network: { type: 'wifi', ssid: 'test-lab', signal: 'strong' } });
  }
}

const integer = (minimum: number, maximum: number): ToolPropertySchema => ({ type: 'integer', minimum, maximum });
const noArguments: ToolInputSchema = { type: 'object', properties: {} };

export function commonTools(board: BoardState): DeviceTool[] {
  return [
    {
      name: 'self.get_device_status',
      description: 'The live state of the device: speaker volume, screen, battery, network. Call it before changing a setting whose current value is unknown.',
      inputSchema: noArguments,
      run: () => board.statusJson(),
    },
    {
      name: 'self.audio_speaker.set_volume',
      description: 'Sets the speaker volume (0-100). Read the current volume with `self.get_device_status` first when it is unknown.',
      inputSchema: { type: 'object', properties: { volume: integer(0, 100) }, required: ['volume'] },
      run: ({ volume }) => {
        board.volume = volume as number;
        return true;
      },
    },
  ];
}

/** A tool of the esp-hi board, whose RGB light is the classic device-control example. */
export function boardTools(board: BoardState): DeviceTool[] {
  return [
    {
      name: 'self.light.set_rgb',
      description: 'Sets the colour of the RGB light.',
      inputSchema: { type: 'object', properties: { r: integer(0, 255), g: integer(0, 255), b: integer(0, 255) }, required: ['r', 'g', 'b'] },
      run: ({ r, g, b }) => {
        board.rgb = { r: r as number, g: g as number, b: b as number };
        return true;
      },
    },
  ];
}

export function userOnlyTools(board: BoardState, identity: BoardIdentity, reboot: () => void): DeviceTool[] {
  const url: ToolInputSchema = { type: 'object', properties: { url: { type: 'string' } }, required: ['url'] };
  return [
    { name: 'self.get_system_info', description: 'The system information.', inputSchema: noArguments, userOnly: true, run: () => systemInfoJson(identity) },
    {
      name: 'self.reboot',
      description: 'Reboots the device.',
      inputSchema: noArguments,
      userOnly: true,
      run: () => {
        board.rebootRequests++;
        reboot();
        return true;
      },
    },
    {
      name: 'self.upgrade_firmware',
      description: 'Downloads and installs the firmware at `url`, then reboots.',
      // The firmware passes its intended description as the third argument of Property, which makes it the default: `url` is optional.
      inputSchema: { type: 'object', properties: { url: { type: 'string', default: 'The URL of the firmware binary file to download and install' } } },
      userOnly: true,
      run: ({ url }) => {
        board.firmwareUpgradeUrl = url as string;
        return true;
      },
    },
    {
      name: 'self.assets.set_download_url',
      description: 'Sets the URL the assets are downloaded from.',
      inputSchema: url,
      userOnly: true,
      run: ({ url }) => {
        board.assetsDownloadUrl = url as string;
        return true;
      },
    },
  ];
}
