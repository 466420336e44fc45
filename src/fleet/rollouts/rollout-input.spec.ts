import { GatewayError } from '../../core/errors/gateway-error';
import { firmwareChange, firmwareInput, MAX_GROUP_DEVICES, MAX_GROUP_GLOBS, percentOf, rolloutInput } from './rollout-input';

const refusal = (work: () => unknown): string => {
  try {
    work();
  } catch (error) {
    expect(error).toBeInstanceOf(GatewayError);
    expect((error as GatewayError).code).toBe('INVALID_MESSAGE');
    return (error as GatewayError).message;
  }
  throw new Error('It was accepted');
};

const FIRMWARE = { version: '2.5.0', url: 'https://fw.example.com/2.5.0.bin', boards: ['esp-box-3'] };

describe('what firmware entries and rollouts accept', () => {
  it('takes a firmware entry and a rollout as documented', () => {
    expect(firmwareInput({ ...FIRMWARE, id: 'box-2.5.0', notes: 'audio fix' })).toEqual({ ...FIRMWARE, id: 'box-2.5.0', notes: 'audio fix' });
    expect(rolloutInput({ firmware_id: 'box-2.5.0', percent: 12.5 })).toEqual({ firmware_id: 'box-2.5.0', group: { percent: 12.5 }, state: 'active' });
    expect(
      rolloutInput({
        endpoint: { websocket_url: 'wss://b.example.com/xiaozhi/v1/', mqtt_endpoint: 'mqtt.example.com:8883' },
        devices: ['aa:bb', 'aa:bb'],
        state: 'paused',
      }),
    ).toEqual({
      endpoint: { websocket_url: 'wss://b.example.com/xiaozhi/v1/', mqtt_endpoint: 'mqtt.example.com:8883' },
      group: { devices: ['aa:bb'] },
      state: 'paused',
    });
  });

  it.each([
    [{ ...FIRMWARE, version: 'v2.5' }, /version: A firmware version is 1 to 8 numbers/],
    [{ ...FIRMWARE, version: 2.5 }, /version: A firmware version/],
    [{ ...FIRMWARE, url: 'ftp://fw.example.com/x.bin' }, /url must be a http or https URL, not ftp:/],
    [{ ...FIRMWARE, url: 'not a url' }, /url must be a http or https URL: "not a url" is not a URL/],
    [{ ...FIRMWARE, url: 'https://user:secret@fw.example.com/x.bin' }, /must not hold credentials/],
    [{ ...FIRMWARE, url: `https://fw.example.com/${'x'.repeat(600)}` }, /at most 512 characters/],
    [{ ...FIRMWARE, boards: [] }, /boards must be a list of 1 to 16 items/],
    [{ ...FIRMWARE, boards: ['box 3'] }, /"box 3" is not a board name or glob/],
    [{ version: '1.0.0', url: FIRMWARE.url }, /boards is required/],
    [{ ...FIRMWARE, colour: 'red' }, /field it does not take: "colour"/],
    [[], /The body must be a JSON object/],
  ])('refuses the firmware entry %j', (body, message) => {
    expect(refusal(() => firmwareInput(body))).toMatch(message);
  });

  it.each([
    [{ firmware_id: 'fw', percent: 101 }, /percent must be a number from 0 to 100/],
    [{ firmware_id: 'fw', percent: -1 }, /percent must be a number from 0 to 100/],
    [{ firmware_id: 'fw', percent: '50' }, /percent must be a number from 0 to 100/],
    [{ firmware_id: 'fw', percent: 0.125 }, /hundredths/],
    [{ firmware_id: 'fw', percent: 10, globs: ['a*'] }, /exactly one of devices/],
    [{ firmware_id: 'fw' }, /exactly one of devices/],
    [{ percent: 10 }, /offers a firmware_id, an endpoint, or both/],
    [{ endpoint: {}, percent: 10 }, /endpoint needs websocket_url, mqtt_endpoint, or both/],
    [{ endpoint: { websocket_url: 'http://b.example.com/' }, percent: 10 }, /websocket_url must be a ws or wss URL, not http:/],
    [{ endpoint: { mqtt_endpoint: 'mqtt.example.com' }, percent: 10 }, /mqtt_endpoint must be host:port/],
    [{ endpoint: { mqtt_endpoint: 'mqtt.example.com:70000' }, percent: 10 }, /mqtt_endpoint must be host:port/],
    [{ firmware_id: 'fw', globs: Array.from({ length: MAX_GROUP_GLOBS + 1 }, (_, i) => `k${i}-*`) }, /globs must be a list of 1 to 16 items/],
    [{ firmware_id: 'fw', globs: ['kitchen'] }, /"kitchen" is not a device glob/],
    [{ firmware_id: 'fw', globs: [`${'a*'.repeat(70)}`] }, /is not a device glob/],
    [{ firmware_id: 'fw', devices: Array.from({ length: MAX_GROUP_DEVICES + 1 }, (_, i) => `d${i}`) }, /devices must be a list of 1 to 1000 items/],
    [{ firmware_id: 'fw', devices: ['a__b'] }, /must not contain "__"/],
    [{ firmware_id: 'fw', devices: [42] }, /"42": A device id is/],
    [{ force: true, endpoint: { websocket_url: 'ws://b/' }, percent: 1 }, /force goes with firmware_id/],
    [{ firmware_id: 'fw', percent: 1, state: 'stopped' }, /state must be "active" or "paused"/],
    [{ firmware_id: '../etc', percent: 1 }, /firmware_id must be the id/],
    [{ id: 'a b', firmware_id: 'fw', percent: 1 }, /id must be 1 to 64 letters/],
  ])('refuses the rollout %j', (body, message) => {
    expect(refusal(() => rolloutInput(body))).toMatch(message);
  });

  it('changes a firmware entry but never its version', () => {
    expect(firmwareChange({ notes: 'recalled' })).toEqual({ notes: 'recalled' });
    expect(refusal(() => firmwareChange({ version: '3.0.0' }))).toMatch(/field it does not take: "version"/);
  });

  it('counts a share in hundredths of a percent', () => {
    expect(percentOf(0.25)).toBe(0.25);
    expect(percentOf(33.33)).toBe(33.33);
    expect(refusal(() => percentOf(Number.NaN))).toMatch(/percent must be a number/);
  });
});
