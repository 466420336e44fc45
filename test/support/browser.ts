import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { BrowserContext, chromium } from 'playwright-core';
import { PROJECT_ROOT } from './built';

/** Debian's chromium package; CHROMIUM_PATH points elsewhere (chromium-browser, a Chrome). */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Where browser tests leave their screenshots (gitignored). */
export const ARTIFACTS_DIR = join(PROJECT_ROOT, 'test-artifacts');

/**
 * No background traffic (the machine and CI are offline), no GPU, no sandbox (CI runs as
 * root, where Chromium's sandbox refuses to start).
 */
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

export interface TestBrowser {
  context: BrowserContext;
  close(): Promise<void>;
}

/**
 * Headless Chromium with a fresh profile, driven by playwright-core. A missing Chromium fails
 * the test with how to install it: these tests must not pass by skipping.
 */
export async function launchChromium(): Promise<TestBrowser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(
      `Chromium is not installed at ${CHROMIUM_PATH}: the web console's browser tests need it. ` +
        'Install Debian\'s package with "apt-get install -y chromium" (.ci/run does), or set CHROMIUM_PATH to another Chromium.',
    );
  }
  mkdirSync(ARTIFACTS_DIR, { recursive: true });
  const profile = mkdtempSync(join(tmpdir(), 'console-chromium-'));
  const context = await chromium
    .launchPersistentContext(profile, { executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS, timeout: 60_000 })
    .catch((error: unknown) => {
      rmSync(profile, { recursive: true, force: true });
      throw error;
    });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
