import type { Logger } from '@nestjs/common';
import type { DeviceReport, DeviceRollouts } from '../../fleet/rollouts/device-rollouts';
import type { DeviceOffer } from '../../fleet/rollouts/rollout-plan';
import { rolloutOverrides } from './rollout-overrides';

const boot = { deviceId: 'aa:bb:cc:00:00:01', userAgent: 'bread-compact-wifi/1.0.0', at: '2026-11-01T00:00:00.000Z' };
const logger = () => {
  const warnings: string[] = [];
  return { warnings, logger: { warn: (message: string) => warnings.push(message) } as unknown as Logger };
};
const rolloutsOffering = (offer: DeviceOffer, asked: DeviceReport[] = []) =>
  ({
    offerFor: async (device: DeviceReport) => {
      asked.push(device);
      return offer;
    },
  }) as unknown as DeviceRollouts;

describe("what a device's rollouts change in its configuration answer", () => {
  it('gives the firmware offered and the moved endpoint, and says none when the device runs its group’s firmware', async () => {
    const { logger: log } = logger();
    const offer: DeviceOffer = {
      firmware: { rollout: 'r', firmware_id: 'fw', version: '2.0.0', offer: { version: '2.0.0', url: 'https://fw/2.bin' } },
      endpoint: { rollout: 'm', websocket_url: 'wss://b/xiaozhi/v1/', mqtt_endpoint: 'b:1883' },
    };
    expect(await rolloutOverrides(rolloutsOffering(offer), boot, undefined, log)).toEqual({
      firmware: { version: '2.0.0', url: 'https://fw/2.bin' },
      websocketUrl: 'wss://b/xiaozhi/v1/',
      mqttEndpoint: 'b:1883',
    });
    expect(await rolloutOverrides(rolloutsOffering({ firmware: { rollout: 'r', firmware_id: 'fw', version: '2.0.0' } }), boot, undefined, log)).toEqual({
      firmware: null,
    });
    expect(await rolloutOverrides(rolloutsOffering({}), boot, undefined, log)).toEqual({});
  });

  it('passes the posted board and version on, bounded, for a device whose User-Agent does not say', async () => {
    const asked: DeviceReport[] = [];
    const { logger: log } = logger();
    const body = { board: { name: 'esp-box-3' }, application: { version: 'x'.repeat(65) } };
    await rolloutOverrides(rolloutsOffering({}, asked), { ...boot, userAgent: undefined }, body, log);
    await rolloutOverrides(rolloutsOffering({}, asked), boot, ['not', 'an', 'object'], log);
    expect(asked).toEqual([
      { id: boot.deviceId, userAgent: undefined, board: 'esp-box-3' },
      { id: boot.deviceId, userAgent: boot.userAgent },
    ]);
  });

  it('offers no firmware at all, not the fallback, when the rollouts cannot be read', async () => {
    const { logger: log, warnings } = logger();
    const failing = { offerFor: async () => Promise.reject(new Error('Redis is away')) } as unknown as DeviceRollouts;
    expect(await rolloutOverrides(failing, boot, undefined, log)).toEqual({ firmware: null });
    expect(warnings).toEqual([`Device ${boot.deviceId}: its rollouts could not be read, no firmware offered: Redis is away`]);
  });
});
