import { execFileSync } from 'child_process';
import { rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import type { Page } from 'playwright-core';
import {
  ARTIFACTS_DIR,
  chooseChromium,
  launchChromium,
  librariesNotFound,
  missingLibraries,
  PACKAGED_CHROMIUM,
  packagedChromiumArgs,
  SYSTEM_CHROMIUM,
  TestBrowser,
  unpackOnce,
} from '../support/browser';
import { LlmStack, startLlmStack } from '../support/llm-stack';

const TOKEN = 'packaged-browser-token';

describe('which Chromium the browser tests run', () => {
  const nothing = () => false;
  const only = (path: string) => (candidate: string) => candidate === path;

  it("takes CHROMIUM_PATH first, Debian's Chromium next, the npm-shipped one last", () => {
    expect(chooseChromium({ CHROMIUM_PATH: '/opt/chrome/chrome' }, only('/opt/chrome/chrome'))).toEqual({
      source: 'CHROMIUM_PATH',
      executablePath: '/opt/chrome/chrome',
    });
    expect(chooseChromium({ CHROMIUM_PATH: '/opt/chrome/chrome' }, () => true)).toEqual({ source: 'CHROMIUM_PATH', executablePath: '/opt/chrome/chrome' });
    expect(chooseChromium({}, only(SYSTEM_CHROMIUM))).toEqual({ source: 'system', executablePath: SYSTEM_CHROMIUM });
    expect(chooseChromium({ CHROMIUM_PATH: '  ' }, only(SYSTEM_CHROMIUM))).toEqual({ source: 'system', executablePath: SYSTEM_CHROMIUM });
    expect(chooseChromium({}, nothing)).toEqual({ source: 'package' });
    expect(chooseChromium({ CHROMIUM_PATH: PACKAGED_CHROMIUM }, () => true)).toEqual({ source: 'package' });
  });

  it('refuses a CHROMIUM_PATH that does not exist rather than running another browser', () => {
    expect(() => chooseChromium({ CHROMIUM_PATH: '/nowhere/chromium' }, only(SYSTEM_CHROMIUM))).toThrow(
      'CHROMIUM_PATH is /nowhere/chromium, which does not exist',
    );
  });

  it("keeps the package's recommended flags but none that would weaken the page's defences", () => {
    const args = packagedChromiumArgs();
    expect(args).toEqual(expect.arrayContaining(['--no-sandbox', '--no-zygote', '--single-process']));
    expect(args).not.toContain('--disable-web-security');
    expect(args).not.toContain('--allow-running-insecure-content');
    expect(packagedChromiumArgs(['--a', '--disable-web-security', '--b'])).toEqual(['--a', '--b']);
  });

  it('unpacks once when several workers ask at the same time, and hands the result to every one', async () => {
    const name = `unpack-once-test-${process.pid}-${Date.now()}`;
    let unpacks = 0;
    const unpack = async () => {
      unpacks += 1;
      await new Promise((resolve) => setTimeout(resolve, 300));
      return '/tmp/somewhere/chromium';
    };
    try {
      expect(await Promise.all([unpackOnce(name, unpack), unpackOnce(name, unpack), unpackOnce(name, unpack)])).toEqual(
        Array(3).fill('/tmp/somewhere/chromium'),
      );
      expect(await unpackOnce(name, unpack)).toBe('/tmp/somewhere/chromium');
      expect(unpacks).toBe(1);
    } finally {
      rmSync(join(tmpdir(), `${name}.unpacked`), { force: true });
    }
  });

  it("reads the libraries a binary lacks from ldd's report", () => {
    const report = [
      '\tlinux-vdso.so.1 (0x00007ffc)',
      '\tlibnss3.so => not found',
      '\tlibdl.so.2 => /lib/x86_64-linux-gnu/libdl.so.2 (0x00007f)',
      '\tlibnspr4.so => not found',
    ].join('\n');
    expect(librariesNotFound(report)).toEqual(['libnss3.so', 'libnspr4.so']);
    expect(missingLibraries(process.execPath)).toEqual([]);
  });
});

/**
 * The fallback of a fresh machine, forced where Debian's Chromium is installed: the Chromium
 * unpacked from @sparticuz/chromium, driven by playwright-core with a persistent context as
 * the console's tests are, loads the console, connects and holds a turn.
 */
describe('the console in the Chromium shipped by npm', () => {
  let stack: LlmStack;

  beforeAll(async () => {
    stack = await startLlmStack({ AUTH_TOKENS: TOKEN });
  });
  afterAll(() => stack?.close());

  async function holdATurn(browser: TestBrowser, screenshot: string): Promise<void> {
    const errors: string[] = [];
    const page: Page = await browser.context.newPage();
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(stack.gateway.http('/'));
    await page.waitForSelector('body[data-ready="true"]');
    await page.fill('#token', TOKEN);
    await page.click('#connect');
    await page.waitForSelector('#connection-state[data-state="open"]');
    await page.fill('#chat-input', 'hello');
    await page.press('#chat-input', 'Enter');
    await page.locator('.entry-assistant', { hasText: 'You said: hello' }).waitFor({ timeout: 10_000 });
    await page.screenshot({ path: join(ARTIFACTS_DIR, screenshot) });
    expect(errors).toEqual([]);
  }

  it("launches the packaged browser, not Debian's, and runs the console in it", async () => {
    const browser = await launchChromium({ choice: { source: 'package' } });
    try {
      expect(browser.source).toBe('package');
      expect(browser.executablePath).not.toBe(SYSTEM_CHROMIUM);
      expect(browser.context.browser()?.version() ?? (await versionOf(browser))).toMatch(/^147\./);
      await holdATurn(browser, 'console-packaged-chromium.png');
    } finally {
      await browser.close();
    }
  }, 120_000);

  it('runs with the libraries the package ships, as on a machine without NSS', async () => {
    const browser = await launchChromium({ choice: { source: 'package' }, bundledLibraries: true });
    try {
      expect(browser.libraryPath).toMatch(/sparticuz-chromium-libs/);
      const resolved = execFileSync('ldd', [browser.executablePath], { encoding: 'utf8', env: { ...process.env, LD_LIBRARY_PATH: browser.libraryPath } });
      expect(resolved).toMatch(new RegExp(`libnss3\\.so => ${browser.libraryPath}/libnss3\\.so`));
      await holdATurn(browser, 'console-packaged-chromium-libs.png');
    } finally {
      await browser.close();
    }
  }, 120_000);
});

/** A persistent context has no Browser object; its version is the user agent's. */
async function versionOf(browser: TestBrowser): Promise<string> {
  const page = await browser.context.newPage();
  try {
    const agent: string = await page.evaluate(() => (globalThis as any).navigator.userAgent);
    return /Chrome\/([\d.]+)/.exec(agent)?.[1] ?? agent;
  } finally {
    await page.close();
  }
}
