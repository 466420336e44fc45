import { randomBytes } from 'crypto';
import { connect, Socket } from 'net';

/** A raw TCP connection to the gateway, for what no well-behaved client library sends. */
export function openTcp(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Completes a WebSocket upgrade by hand; resolves once the 101 has been read. */
export async function upgradeRaw(port: number, path: string): Promise<Socket> {
  const socket = await openTcp(port);
  socket.write(
    [
      `GET ${path} HTTP/1.1`,
      `Host: 127.0.0.1:${port}`,
      'Upgrade: websocket',
      'Connection: Upgrade',
      `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`,
      'Sec-WebSocket-Version: 13',
      '',
      '',
    ].join('\r\n'),
  );
  await new Promise<void>((resolve, reject) => {
    let head = '';
    const onData = (chunk: Buffer) => {
      head += chunk.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      if (head.startsWith('HTTP/1.1 101')) resolve();
      else reject(new Error(`Upgrade refused: ${head.split('\r\n')[0]}`));
    };
    socket.on('data', onData);
  });
  return socket;
}

/**
 * Starts one masked text frame that says it carries `length` bytes, then writes its payload as
 * fast as the socket takes it until `length` is reached or the gateway closes the connection.
 */
export function streamHugeFrame(socket: Socket, length: number): Promise<void> {
  const header = Buffer.alloc(14);
  header[0] = 0x81;
  header[1] = 0x80 | 127;
  header.writeBigUInt64BE(BigInt(length), 2);
  // Mask key 0: the payload goes as it is.
  socket.write(header);
  const chunk = Buffer.alloc(65536, 0x20);
  let written = 0;
  return new Promise((resolve) => {
    const pump = () => {
      while (written < length && !socket.destroyed) {
        written += chunk.length;
        if (!socket.write(chunk)) return void socket.once('drain', pump);
      }
    };
    socket.on('error', () => undefined);
    socket.once('close', () => resolve());
    pump();
  });
}
