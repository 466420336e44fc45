// The LLM gateway's wire contract is the server's (src/llm-gateway/protocol/ and core's error
// codes); this client is built with a copy of it in src/protocol/, made here before every build,
// so the two ends cannot drift apart and the server never reads this package's build.
import { copyFileSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const sdk = join(dirname(fileURLToPath(import.meta.url)), '..');
const server = join(sdk, '..', '..', 'src');
const contract = join(server, 'llm-gateway', 'protocol');
const copy = join(sdk, 'src', 'protocol');

rmSync(copy, { recursive: true, force: true });
mkdirSync(copy, { recursive: true });
for (const file of readdirSync(contract)) {
  if (file.endsWith('.ts') && !file.endsWith('.spec.ts')) copyFileSync(join(contract, file), join(copy, file));
}
// In the server, error-codes.ts and languages.ts forward core's vocabulary and the assistant's
// languages; the client gets the files themselves.
copyFileSync(join(server, 'core', 'errors', 'error-codes.ts'), join(copy, 'error-codes.ts'));
copyFileSync(join(server, 'assistant', 'speech', 'languages.ts'), join(copy, 'languages.ts'));
