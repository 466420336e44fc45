import { loadGatewayConfig } from '../../config/gateway-config';
import { configurationAnswer, publicBaseUrl, timeZoneOffsetMinutes } from './configuration-answer';

describe('the xiaozhi configuration answer', () => {
  const at = new Date('2026-07-01T12:00:00Z');

  it('gives the session URL on the public address, the device token, the time with its zone offset, and no firmware unless one is set', () => {
    const config = loadGatewayConfig({ PUBLIC_URL: 'https://gw.example.com/', XIAOZHI_DEVICE_TOKEN: 'device-secret', DEFAULT_TIMEZONE: 'Europe/Paris' });
    expect(configurationAnswer(config, publicBaseUrl(config, 'internal:3000', false), at)).toEqual({
      websocket: { url: 'wss://gw.example.com/xiaozhi/v1/', token: 'device-secret' },
      server_time: { timestamp: at.getTime(), timezone_offset: 120 },
    });
  });

  it('falls back on the request host, and offers the configured firmware', () => {
    const config = loadGatewayConfig({ XIAOZHI_FIRMWARE_VERSION: '1.9.0', XIAOZHI_FIRMWARE_URL: 'https://fw.example.com/xiaozhi-1.9.0.bin' });
    const answer = configurationAnswer(config, publicBaseUrl(config, '192.168.1.5:8080', false), at);
    expect(answer.websocket).toEqual({ url: 'ws://192.168.1.5:8080/xiaozhi/v1/', token: '' });
    expect(answer.firmware).toEqual({ version: '1.9.0', url: 'https://fw.example.com/xiaozhi-1.9.0.bin' });
  });

  it("puts a rollout's firmware and endpoint in place of the gateway's, and leaves the firmware out when the rollout says none", () => {
    const config = loadGatewayConfig({ XIAOZHI_FIRMWARE_VERSION: '1.9.0', XIAOZHI_FIRMWARE_URL: 'https://fw.example.com/xiaozhi-1.9.0.bin' });
    const base = 'http://gw.example.com';
    const moved = configurationAnswer(config, base, at, undefined, {
      firmware: { version: '2.0.1', url: 'https://fw.example.com/box-2.0.1.bin', force: 1 },
      websocketUrl: 'wss://new.example.com/xiaozhi/v1/',
    });
    expect(moved.firmware).toEqual({ version: '2.0.1', url: 'https://fw.example.com/box-2.0.1.bin', force: 1 });
    expect(moved.websocket?.url).toBe('wss://new.example.com/xiaozhi/v1/');
    expect(configurationAnswer(config, base, at, undefined, { firmware: null }).firmware).toBeUndefined();
    const mqtt = { endpoint: 'gw.example.com:1883', client_id: 'c', username: 'u', password: 'p', publish_topic: 't', keepalive: 240 };
    expect(configurationAnswer(config, base, at, mqtt as never, { mqttEndpoint: 'mqtt2.example.com:8883' }).mqtt?.endpoint).toBe('mqtt2.example.com:8883');
  });

  it('refuses a firmware version without its URL', () => {
    expect(() => loadGatewayConfig({ XIAOZHI_FIRMWARE_VERSION: '1.9.0' })).toThrow(/XIAOZHI_FIRMWARE_VERSION and XIAOZHI_FIRMWARE_URL go together/);
  });

  it('computes zone offsets east and west of Greenwich, daylight saving included', () => {
    expect(timeZoneOffsetMinutes('Asia/Shanghai', at)).toBe(480);
    expect(timeZoneOffsetMinutes('America/New_York', at)).toBe(-240);
    expect(timeZoneOffsetMinutes('America/New_York', new Date('2026-01-15T12:00:00Z'))).toBe(-300);
    expect(timeZoneOffsetMinutes('Asia/Kolkata', at)).toBe(330);
    expect(timeZoneOffsetMinutes('UTC', at)).toBe(0);
  });
});
