import { withDeviceCredential } from './device-credential-answer';
import type { ConfigurationAnswer } from './configuration-answer';

const serverTime = { timestamp: 1, timezone_offset: 0 };
const websocketAnswer: ConfigurationAnswer = { websocket: { url: 'ws://gw/xiaozhi/v1/', token: 'shared' }, server_time: serverTime };
const mqttAnswer: ConfigurationAnswer = {
  mqtt: { endpoint: 'gw:1883', client_id: 'aa', username: 'aa', password: 'derived', publish_topic: 'xiaozhi/aa/up', keepalive: 240 },
  server_time: serverTime,
};
const activation = { code: '123456', message: 'Activation code 123456', challenge: 'c', timeout_ms: 300_000 };

describe('the configuration answer with activation', () => {
  it('gives an unbound device its activation and no session section to connect with', () => {
    expect(withDeviceCredential(websocketAnswer, { activation })).toEqual({ server_time: serverTime, activation });
    expect(withDeviceCredential(mqttAnswer, { activation })).toEqual({ server_time: serverTime, activation });
  });

  it('hands a bound device its own secret once, in place of the shared token or the derived password', () => {
    expect(withDeviceCredential(websocketAnswer, { secret: 'dev_x' }).websocket).toEqual({ url: 'ws://gw/xiaozhi/v1/', token: 'dev_x' });
    expect(withDeviceCredential(mqttAnswer, { secret: 'dev_x' }).mqtt).toMatchObject({ username: 'aa', password: 'dev_x' });
  });

  it('sends no credential at all afterwards: the device keeps the one it stored', () => {
    expect(withDeviceCredential(websocketAnswer, { keep: true }).websocket).toEqual({ url: 'ws://gw/xiaozhi/v1/' });
    expect(withDeviceCredential(mqttAnswer, { keep: true }).mqtt).not.toHaveProperty('password');
  });
});
