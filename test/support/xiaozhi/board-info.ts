/**
 * What a simulated board says about itself: the identity the firmware puts in its HTTP and
 * WebSocket headers, and the system information JSON it posts to the OTA URL (and returns from
 * its `self.get_system_info` tool). That JSON mirrors the shape and key order of
 * Board::GetSystemInfoJson and WifiBoard::GetBoardJson, with the values of an ESP32-S3
 * breadboard build; like the firmware's, it says `minimum_free_heap_size` as a string.
 */

export interface BoardIdentity {
  /** The Wi-Fi MAC address, lowercase `aa:bb:cc:dd:ee:ff` (the `Device-Id` header). */
  deviceId: string;
  /** The UUID the firmware generates once and keeps in flash (the `Client-Id` header). */
  clientId: string;
  /** BOARD_NAME, e.g. `bread-compact-wifi`: the first half of the User-Agent and the MCP server name. */
  board: string;
  /** The application version, e.g. `2.4.2`: the second half of the User-Agent. */
  firmwareVersion: string;
  /** Lang::CODE, the `Accept-Language` header (`zh-CN` in the firmware's default build). */
  language: string;
  /** The eFuse serial number of boards that have one: the OTA request then says `Activation-Version: 2`. */
  serialNumber?: string;
}

/** SystemInfo::GetUserAgent. */
export function userAgent(identity: BoardIdentity): string {
  return `${identity.board}/${identity.firmwareVersion}`;
}

const PARTITIONS = [
  { label: 'nvs', type: 1, subtype: 2, address: 0x9000, size: 0x4000 },
  { label: 'otadata', type: 1, subtype: 0, address: 0xd000, size: 0x2000 },
  { label: 'phy_init', type: 1, subtype: 1, address: 0xf000, size: 0x1000 },
  { label: 'ota_0', type: 0, subtype: 16, address: 0x20000, size: 0x3f0000 },
  { label: 'ota_1', type: 0, subtype: 17, address: 0x410000, size: 0x3f0000 },
  { label: 'assets', type: 1, subtype: 130, address: 0x800000, size: 0x800000 },
];

/** The body of the OTA request. */
export function systemInfoJson(identity: BoardIdentity): string {
  const application = {
    name: 'xiaozhi',
    version: identity.firmwareVersion,
    compile_time: 'Aug  8 2026T08:33:45Z',
    idf_version: 'v5.5.1',
    elf_sha256: 'c0ffee'.padEnd(64, '0'),
  };
  const info = {
    version: 2,
    language: identity.language,
    flash_size: 16 * 1024 * 1024,
    minimum_free_heap_size: '62148',
    mac_address: identity.deviceId,
    uuid: identity.clientId,
    chip_model_name: 'esp32s3',
    chip_info: { model: 9, cores: 2, revision: 2, features: 18 },
    application,
  };
  const partitions = PARTITIONS.map((partition) => JSON.stringify(partition)).join(',');
  const display = { monochrome: true, width: 128, height: 64 };
  const board = {
    type: identity.board,
    name: identity.board,
    manufacturer: '',
    ssid: 'test-lab',
    rssi: -52,
    channel: 6,
    ip: '192.168.1.23',
    mac: identity.deviceId,
  };
  const head = JSON.stringify(info).slice(0, -1);
  return `${head},"partition_table": [${partitions}],"ota":{"label":"ota_0"},"display":${JSON.stringify(display)},"board":${JSON.stringify(board)}}`;
}
