/** @jest-environment ./test/support/native-typed-arrays.environment.js */
import { Logger } from '@nestjs/common';
import { execFileSync } from 'child_process';
import { mkdtempSync, readFileSync, rmSync } from 'fs';
import { connectAsync } from 'mqtt';
import { tmpdir } from 'os';
import { join } from 'path';
import { XiaozhiMqttServer } from '../../src/xiaozhi/mqtt/xiaozhi-mqtt.server';
import { sine } from '../support/scripted-speech-server';
import { MqttXiaozhiDevice } from '../support/xiaozhi/mqtt-device';
import { connectPacket, RawMqttConnection } from '../support/xiaozhi/raw-mqtt';
import { startXiaozhiStack, XiaozhiStack } from '../support/xiaozhi/xiaozhi-stack';

const OUTPUT_RATE = 24_000;
const OPUS_SILENCE = Buffer.from([0xf8, 0xff, 0xfe]);

/**
 * The embedded MQTT server over TLS (`XIAOZHI_MQTT_TLS_CERT`, `XIAOZHI_MQTT_TLS_KEY`), with a
 * self-signed certificate for `localhost` made here by openssl. Devices are told port 8883, the
 * one port the firmware speaks TLS on (`esp_mqtt.cc`: `broker_port == 8883`), as through a load
 * balancer that forwards it to the server's own port; a real `mqtt` client connects over mqtts
 * with the certificate as its CA, and the device is served as over plain MQTT.
 */
describe('xiaozhi devices over MQTT with TLS', () => {
  const dir = mkdtempSync(join(tmpdir(), 'vtg-mqtt-tls-'));
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  let stack: XiaozhiStack;
  let server: XiaozhiMqttServer;
  let ca: Buffer;
  const warnings: string[] = [];
  const devices: MqttXiaozhiDevice[] = [];

  beforeAll(async () => {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=DNS:localhost',
        '-keyout',
        keyFile,
        '-out',
        certFile,
      ],
      { stdio: 'ignore' },
    );
    ca = readFileSync(certFile);
    jest.spyOn(Logger.prototype, 'warn').mockImplementation((message: unknown) => void warnings.push(String(message)));
    stack = await startXiaozhiStack({
      XIAOZHI_MQTT_PORT: 0,
      XIAOZHI_MQTT_HOST: '127.0.0.1',
      XIAOZHI_TRANSPORT: 'mqtt',
      XIAOZHI_MQTT_TLS_CERT: certFile,
      XIAOZHI_MQTT_TLS_KEY: keyFile,
      XIAOZHI_MQTT_PUBLIC_ENDPOINT: 'localhost:8883',
      VAD_SILENCE_MS: 500,
    });
    server = stack.gateway.app.get(XiaozhiMqttServer);
  });

  afterAll(async () => {
    jest.restoreAllMocks();
    await Promise.all(devices.map((device) => device.close()));
    await stack?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('tells devices port 8883, where the firmware speaks TLS, and warns of no mismatch', async () => {
    const device = new MqttXiaozhiDevice({ deviceId: 'aa:bb:cc:40:00:01' });
    devices.push(device);
    await device.requestConfiguration(stack.gateway.http('/xiaozhi/ota/'));
    expect(device.configuration.mqtt.endpoint).toBe('localhost:8883');
    expect(warnings.filter((line) => /8883/.test(line))).toEqual([]);
  });

  it('warns at start when TLS is served but devices would be told another port than 8883; gives the UDP address and port an instance advertises', async () => {
    const mismatched = await startXiaozhiStack({
      XIAOZHI_MQTT_PORT: 0,
      XIAOZHI_MQTT_HOST: '127.0.0.1',
      XIAOZHI_TRANSPORT: 'mqtt',
      XIAOZHI_MQTT_TLS_CERT: certFile,
      XIAOZHI_MQTT_TLS_KEY: keyFile,
      XIAOZHI_UDP_PUBLIC_HOST: '203.0.113.10',
      XIAOZHI_UDP_PUBLIC_PORT: 10002,
    });
    const device = new MqttXiaozhiDevice({ deviceId: 'aa:bb:cc:40:00:04' });
    try {
      const port = mismatched.gateway.app.get(XiaozhiMqttServer).port;
      expect(warnings.filter((line) => line.includes(`devices are told port ${port}: the firmware speaks TLS on port 8883 only`))).toHaveLength(1);
      await device.requestConfiguration(mismatched.gateway.http('/xiaozhi/ota/'));
      expect(device.configuration.mqtt.endpoint).toBe(`127.0.0.1:${port}`);
      await device.connect({ tls: { ca, servername: 'localhost' } });
      const hello = await device.openAudioChannel();
      expect(hello.udp).toMatchObject({ server: '203.0.113.10', port: 10002 });
    } finally {
      await device.close();
      await mismatched.close();
    }
  });

  it('serves a device over mqtts: its credentials checked, its audio channel opened, a spoken turn answered', async () => {
    const device = new MqttXiaozhiDevice({ deviceId: 'aa:bb:cc:40:00:02' });
    devices.push(device);
    await device.requestConfiguration(stack.gateway.http('/xiaozhi/ota/'));
    await expect(device.connect({ endpoint: `127.0.0.1:${server.port}`, tls: { ca, servername: 'localhost' }, password: 'wrong' })).rejects.toThrow();
    await device.connect({ endpoint: `127.0.0.1:${server.port}`, tls: { ca, servername: 'localhost' } });
    await device.openAudioChannel();
    device.sendPacket(OPUS_SILENCE);
    stack.stt.reply({ text: 'what time is it' });
    stack.llm.reply({ text: 'It is noon.' });
    stack.tts.reply({ samples: sine(440, 0.5, OUTPUT_RATE) });
    await device.listen('manual');
    await device.say('what time is it', { beforeMs: 100, afterMs: 200 });
    await device.stopListening();
    expect(await device.next<any>('stt', undefined, 10_000)).toMatchObject({ text: 'what time is it' });
    await device.next('tts', (message: any) => message.state === 'stop', 10_000);
    const deadline = Date.now() + 5000;
    while (device.audio.length < 9 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
    expect(device.audio.length).toBeGreaterThanOrEqual(9);
  });

  it('refuses a client that does not trust the certificate, and one that speaks plain MQTT to the TLS port', async () => {
    const device = new MqttXiaozhiDevice({ deviceId: 'aa:bb:cc:40:00:03' });
    devices.push(device);
    await device.requestConfiguration(stack.gateway.http('/xiaozhi/ota/'));
    const { client_id, username, password } = device.configuration.mqtt;
    const options = { clientId: String(client_id), username: String(username), password: String(password), reconnectPeriod: 0, connectTimeout: 3000 };
    await expect(connectAsync(`mqtts://127.0.0.1:${server.port}`, { ...options, servername: 'localhost', rejectUnauthorized: true })).rejects.toThrow(
      /self[- ]signed|certificate/i,
    );
    // Plain MQTT to the TLS port: its CONNECT is no TLS handshake, and the connection ends without a CONNACK.
    const plain = await RawMqttConnection.open(server.port);
    await plain.write(connectPacket({ clientId: options.clientId, username: options.username, password: options.password, keepaliveS: 60 }));
    expect(await plain.connack()).toBeUndefined();
  });
});
