import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { Writable } from 'stream';
import { conformanceServer } from './conformance-upstream';

/**
 * The conformance upstream (test/support/conformance-upstream.ts) over stdio, as a servers
 * file's `command` and `args`: this file run by this Node through ts-node, one session for the
 * life of the process.
 */
export const CONFORMANCE_STDIO_UPSTREAM = {
  command: process.execPath,
  args: ['-r', require.resolve('ts-node/register/transpile-only'), __filename],
};

/**
 * Its stdout, buffered as a server's often is (Python's, for one, when stdout is a pipe): what it
 * writes within one turn of the event loop goes out in one write, so the gateway reads messages
 * written together (a call's last progress notification and its answer) in one chunk, every
 * time rather than when the pipe happens to give them so.
 */
function bufferedStdout(): Writable {
  let pending: Buffer[] = [];
  const flush = () => {
    process.stdout.write(Buffer.concat(pending));
    pending = [];
  };
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      if (pending.length === 0) setImmediate(flush);
      pending.push(chunk);
      done();
    },
  });
}

if (require.main === module) void conformanceServer().connect(new StdioServerTransport(process.stdin, bufferedStdout()));
