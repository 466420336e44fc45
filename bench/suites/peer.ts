import type { LoopBounds } from '../support/closed-loop';

export interface PeerOptions {
  connections: number[];
  bounds: LoopBounds;
}

export async function benchPeer(_options: PeerOptions): Promise<void> {
  throw new Error('peer: not written yet');
}
