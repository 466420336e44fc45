import { Inject, Injectable, Logger } from '@nestjs/common';
import { existsSync, readdirSync } from 'fs';
import { extname, join, relative, sep } from 'path';
import { GATEWAY_CONFIG, GatewayConfig } from '../config/gateway-config';

/** The console's own files: HTML, CSS and ES modules, served as they are (no build step). */
export const CONSOLE_PUBLIC_DIR = join(__dirname, 'public');

/**
 * The client SDK's ES-module build (`dist/esm`), which the console imports from `/console/sdk/`. Found
 * beside `src/` and `dist/` alike (the repository's `packages/`), as `data/` is.
 */
export const CLIENT_SDK_BUILD_DIR = join(__dirname, '..', '..', 'packages', 'client-sdk', 'dist', 'esm');

/** What the console page (`index.html`) is served as. */
export const CONSOLE_PAGE = 'index.html';

/**
 * The files the console may serve, by URL path under `/console/`, indexed once at boot. Only
 * files that exist in the two folders then are ever served, so no request path can reach
 * anything else.
 */
@Injectable()
export class ConsoleAssets {
  private readonly files = new Map<string, string>();

  constructor(@Inject(GATEWAY_CONFIG) config: GatewayConfig) {
    if (!config.console.enabled) return;
    this.index(CONSOLE_PUBLIC_DIR, '', () => true);
    if (existsSync(CLIENT_SDK_BUILD_DIR)) {
      this.index(CLIENT_SDK_BUILD_DIR, 'sdk/', (file) => extname(file) === '.js');
    } else {
      new Logger('Console').warn(
        `The web console needs the client SDK's build at ${CLIENT_SDK_BUILD_DIR}: run "npm run build:sdk" (npm start and npm run build do)`,
      );
    }
  }

  /** Absolute path of the file served at `/console/<path>`, if there is one. */
  fileAt(path: string): string | undefined {
    return this.files.get(path);
  }

  private index(directory: string, prefix: string, include: (file: string) => boolean, root = directory): void {
    for (const entry of readdirSync(directory, { withFileTypes: true })) {
      const path = join(directory, entry.name);
      if (entry.isDirectory()) this.index(path, prefix, include, root);
      else if (entry.isFile() && include(path)) this.files.set(prefix + relative(root, path).split(sep).join('/'), path);
    }
  }
}
