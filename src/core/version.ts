import { readFileSync } from 'fs';
import { join } from 'path';

/** The gateway's version, from package.json (two levels above this file in src/ and dist/). */
export const GATEWAY_VERSION: string = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')).version;
