import type { Page } from 'playwright-core';
import { consoleInBrowser } from '../support/console-browser';
import { XiaozhiDevice } from '../support/xiaozhi/xiaozhi-device';

const TOKEN = 'console-owner-token';

/** The console's Devices view binds a new device by the code it speaks (`XIAOZHI_ACTIVATION=required`), in headless Chromium. */
describe('web console: activating a device in a real browser', () => {
  const pages = consoleInBrowser({ AUTH_TOKENS: TOKEN, XIAOZHI_ACTIVATION: 'required' });
  const devices: XiaozhiDevice[] = [];

  afterEach(async () => {
    await Promise.all(devices.splice(0).map((device) => device.close()));
  });

  async function openDevices(): Promise<Page> {
    const page = await pages.newPage();
    await page.fill('#token', TOKEN);
    await page.click('[data-tab="devices"]');
    return page;
  }

  it('binds the device speaking the code, and says why a wrong code binds nothing', async () => {
    const device = new XiaozhiDevice({ deviceId: '02:00:00:00:aa:01' });
    devices.push(device);
    const answer = await device.requestConfiguration(pages.stack.gateway.http('/xiaozhi/ota/'));
    const code: string = answer.body.activation.code;
    const page = await openDevices();

    await page.fill('#activation-code', code === '000000' ? '000001' : '000000');
    await page.click('#device-activate button[type="submit"]');
    await page
      .locator('#activation-result .failed', { hasText: 'NOT_FOUND (HTTP 404): No device is waiting for this activation code' })
      .waitFor({ timeout: 10_000 });

    await page.fill('#activation-code', code);
    await page.click('#device-activate button[type="submit"]');
    await page.locator('#activation-result .ok', { hasText: 'Device 02:00:00:00:aa:01 is yours' }).waitFor({ timeout: 10_000 });
    expect(await page.inputValue('#activation-code')).toBe('');

    const issued = await device.requestConfiguration(pages.stack.gateway.http('/xiaozhi/ota/'));
    expect(issued.body.websocket.token).toMatch(/^dev_/);
  }, 60_000);
});
