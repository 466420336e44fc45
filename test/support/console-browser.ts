import type { Page } from 'playwright-core';
import type { EnvironmentInput } from '../../src/config/environment';
import { launchChromium, TestBrowser } from './browser';
import { LlmStack, startLlmStack } from './llm-stack';

export const DESKTOP = { width: 1280, height: 900 };
export const PHONE = { width: 390, height: 844 };

/** The web console's browser tests' common ground: a gateway on a scripted model, headless Chromium, and console pages whose errors fail the test. */
export interface ConsoleInBrowser {
  readonly stack: LlmStack;
  readonly browser: TestBrowser;
  /** The console page at `path` of the stack's gateway, ready, not connected. */
  newPage(path?: string, viewport?: { width: number; height: number }): Promise<Page>;
}

/**
 * Starts the gateway (with `settings`) and Chromium for the describe block that calls it, resets
 * the scripted model before each test, and after each closes its pages and fails it if a page
 * threw or the page's Content-Security-Policy blocked a request (Chromium reports those on the
 * console).
 */
export function consoleInBrowser(settings: EnvironmentInput): ConsoleInBrowser {
  let stack: LlmStack | undefined;
  let browser: TestBrowser | undefined;
  const pageErrors: string[] = [];
  const blocked: string[] = [];

  beforeAll(async () => {
    const started = await startLlmStack(settings);
    stack = started;
    browser = await launchChromium().catch(async (error: unknown) => {
      await started.close();
      throw error;
    });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await stack?.close();
  });

  beforeEach(() => stack?.llm.reset());

  afterEach(async () => {
    await Promise.all((browser?.context.pages() ?? []).map((page) => page.close()));
    expect(pageErrors.splice(0)).toEqual([]);
    expect(blocked.splice(0)).toEqual([]);
  });

  return {
    get stack() {
      return stack!;
    },
    get browser() {
      return browser!;
    },
    async newPage(path = '/', viewport = DESKTOP) {
      const page = await browser!.context.newPage();
      page.on('pageerror', (error) => pageErrors.push(error.message));
      page.on('console', (message) => {
        if (/Content Security Policy/i.test(message.text())) blocked.push(message.text());
      });
      await page.setViewportSize(viewport);
      await page.goto(stack!.gateway.http(path));
      await page.waitForSelector('body[data-ready="true"]');
      return page;
    },
  };
}
