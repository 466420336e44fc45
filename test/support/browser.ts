import packagedChromium from '@sparticuz/chromium';
import { execFileSync } from 'child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { BrowserContext, chromium } from 'playwright-core';
import { brotliDecompressSync } from 'zlib';
import { PROJECT_ROOT } from './built';

/** Debian's chromium package, the browser of the machines we develop on. */
export const SYSTEM_CHROMIUM = '/usr/bin/chromium';

/**
 * The npm package whose headless Chromium the tests fall back to. It ships the browser inside
 * the package (brotli-compressed), so a fresh `npm ci` has a browser without any download.
 * Also accepted as the value of `CHROMIUM_PATH`, to run the browser tests on it on purpose.
 */
export const PACKAGED_CHROMIUM = '@sparticuz/chromium';

/** Where browser tests leave their screenshots (gitignored). */
export const ARTIFACTS_DIR = join(PROJECT_ROOT, 'test-artifacts');

/** Which Chromium the browser tests run, and why that one. */
export type ChromiumChoice = { source: 'CHROMIUM_PATH'; executablePath: string } | { source: 'system'; executablePath: string } | { source: 'package' };

/**
 * `CHROMIUM_PATH` when set (the package's name selects the packaged one), else Debian's
 * Chromium when it is installed, else the one inside `@sparticuz/chromium`. Never a download,
 * never a skip: a fresh machine without Chromium still runs every browser test.
 */
export function chooseChromium(env: NodeJS.ProcessEnv = process.env, exists: (path: string) => boolean = existsSync): ChromiumChoice {
  const configured = env.CHROMIUM_PATH?.trim();
  if (configured === PACKAGED_CHROMIUM) return { source: 'package' };
  if (configured) {
    if (!exists(configured)) {
      throw new Error(
        `CHROMIUM_PATH is ${configured}, which does not exist: point it at a Chromium, or unset it to use ${SYSTEM_CHROMIUM} or the one in ${PACKAGED_CHROMIUM}.`,
      );
    }
    return { source: 'CHROMIUM_PATH', executablePath: configured };
  }
  if (exists(SYSTEM_CHROMIUM)) return { source: 'system', executablePath: SYSTEM_CHROMIUM };
  return { source: 'package' };
}

/**
 * No background traffic (the machine and CI are offline), no GPU, no sandbox (CI runs as
 * root, where Chromium's sandbox refuses to start).
 */
const SYSTEM_CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

/**
 * The flags @sparticuz/chromium recommends for its build (single process, no zygote, no
 * sandbox, SwiftShader), less those that would lower the page's defences: with web security
 * off, a console test of CORS or CSP would pass in this browser and fail in a real one.
 */
const WEAKENING_FLAGS = new Set(['--disable-web-security', '--allow-running-insecure-content', '--disable-site-isolation-trials']);

export function packagedChromiumArgs(recommended: string[] = packagedChromium.args): string[] {
  return recommended.filter((flag) => !WEAKENING_FLAGS.has(flag));
}

/**
 * Shared libraries the executable cannot find, as `ldd` reports them. The packaged build links
 * NSS, NSPR and expat dynamically; most Debian machines have them (Java, curl and Chromium
 * pull them in), a minimal one may not.
 */
export function missingLibraries(executablePath: string, env: NodeJS.ProcessEnv = process.env): string[] {
  return librariesNotFound(execFileSync('ldd', [executablePath], { encoding: 'utf8', env }));
}

/** The names `ldd` lists as `=> not found`. */
export function librariesNotFound(lddReport: string): string[] {
  return lddReport
    .split('\n')
    .filter((line) => line.includes('=> not found'))
    .map((line) => line.trim().split(/\s+/)[0]);
}

/** How long a test waits for another process unpacking the packaged Chromium; then its lock counts as abandoned. */
const UNPACK_WAIT_MS = 180_000;

/**
 * Runs `unpack` in one process at a time, once per machine. The package unpacks in place in the
 * temp folder and takes any file there as done, so a jest worker starting while another is
 * still writing would launch half a browser: workers wait on a lock directory (mkdir is atomic)
 * and a marker written only when unpacking has finished.
 */
export async function unpackOnce(name: string, unpack: () => Promise<string>): Promise<string> {
  const done = join(tmpdir(), `${name}.unpacked`);
  const lock = join(tmpdir(), `${name}.lock`);
  const deadline = Date.now() + 2 * UNPACK_WAIT_MS;
  for (;;) {
    if (existsSync(done)) return readFileSync(done, 'utf8');
    try {
      mkdirSync(lock);
      break;
    } catch {
      const lockedAt = statSync(lock, { throwIfNoEntry: false })?.mtimeMs;
      if (lockedAt !== undefined && Date.now() - lockedAt > UNPACK_WAIT_MS) rmSync(lock, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`Waited ${(2 * UNPACK_WAIT_MS) / 1000} s for another process unpacking ${name} (lock ${lock})`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
  try {
    if (existsSync(done)) return readFileSync(done, 'utf8');
    const result = await unpack();
    writeFileSync(done, result);
    return result;
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/**
 * The libraries @sparticuz/chromium ships for Amazon Linux 2023 (NSS, NSPR, expat), unpacked
 * beside the browser; the package itself unpacks them only on that system. Returns the folder
 * to put on `LD_LIBRARY_PATH`.
 */
export function unpackBundledLibraries(): Promise<string> {
  return unpackOnce('sparticuz-chromium-libs', async () => {
    const target = join(tmpdir(), 'sparticuz-chromium-libs');
    mkdirSync(target, { recursive: true });
    const archive = join(require.resolve(PACKAGED_CHROMIUM), '..', '..', '..', 'bin', 'al2023.tar.br');
    execFileSync('tar', ['-x', '-C', target], { input: brotliDecompressSync(readFileSync(archive)) });
    return join(target, 'lib');
  });
}

export interface LaunchOptions {
  /** Overrides {@link chooseChromium}: the fallback test forces the packaged browser with it. */
  choice?: ChromiumChoice;
  /** Load the package's own NSS libraries even where the system has them (to test that path). */
  bundledLibraries?: boolean;
  /** Flags added to the launch's own (a fake microphone for the Talk view). */
  extraArgs?: string[];
}

export interface TestBrowser {
  context: BrowserContext;
  /** The Chromium running, and which rule chose it. */
  executablePath: string;
  source: ChromiumChoice['source'];
  /** `LD_LIBRARY_PATH` the browser was started with, when the package's libraries were needed. */
  libraryPath?: string;
  close(): Promise<void>;
}

/** Headless Chromium with a fresh profile, driven by playwright-core. */
export async function launchChromium(options: LaunchOptions = {}): Promise<TestBrowser> {
  const choice = options.choice ?? chooseChromium();
  let executablePath: string;
  let args = SYSTEM_CHROMIUM_ARGS;
  let env: Record<string, string> | undefined;
  let libraryPath: string | undefined;
  if (choice.source === 'package') {
    // Unpacks into the temp folder once (about 8 s), then reuses it.
    executablePath = await unpackOnce('sparticuz-chromium', () => packagedChromium.executablePath());
    args = packagedChromiumArgs();
    if (options.bundledLibraries || missingLibraries(executablePath).length > 0) {
      libraryPath = await unpackBundledLibraries();
      env = { ...(process.env as Record<string, string>), LD_LIBRARY_PATH: [libraryPath, process.env.LD_LIBRARY_PATH].filter(Boolean).join(':') };
      const stillMissing = missingLibraries(executablePath, env);
      if (stillMissing.length > 0) {
        throw new Error(
          `The Chromium of ${PACKAGED_CHROMIUM} cannot find ${stillMissing.join(', ')}: install Debian's chromium package ("apt-get install -y chromium") or those libraries.`,
        );
      }
    }
  } else {
    executablePath = choice.executablePath;
  }
  mkdirSync(ARTIFACTS_DIR, { recursive: true });
  const profile = mkdtempSync(join(tmpdir(), 'console-chromium-'));
  const context = await chromium
    .launchPersistentContext(profile, { executablePath, headless: true, args: [...args, ...(options.extraArgs ?? [])], env, timeout: 60_000 })
    .catch((error: unknown) => {
      rmSync(profile, { recursive: true, force: true });
      throw error;
    });
  return {
    context,
    executablePath,
    source: choice.source,
    libraryPath,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
