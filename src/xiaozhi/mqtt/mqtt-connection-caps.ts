import type { Socket } from 'net';

/** Why a connection was refused at accept. */
export type MqttConnectionRefusal = 'total' | 'address';

/**
 * The MQTT listener's caps on connections held at once, counted from accept (before a CONNECT is
 * read, so a flood of idle or unauthenticated connections is bounded too): in all, and per remote
 * address. One counter per address that holds a connection; an address is forgotten with its last.
 */
export class MqttConnectionCaps {
  private total = 0;
  private readonly perAddress = new Map<string, number>();

  constructor(
    private readonly maxTotal: number,
    /** 0: no limit. */
    private readonly maxPerAddress: number,
  ) {}

  get open(): number {
    return this.total;
  }

  /** Counts `connection` until it closes, or says which cap it would exceed (and counts nothing). */
  admit(connection: Socket): MqttConnectionRefusal | undefined {
    const address = connection.remoteAddress ?? '';
    const held = this.perAddress.get(address) ?? 0;
    if (this.total >= this.maxTotal) return 'total';
    if (this.maxPerAddress > 0 && held >= this.maxPerAddress) return 'address';
    this.total += 1;
    this.perAddress.set(address, held + 1);
    connection.once('close', () => {
      this.total -= 1;
      const left = (this.perAddress.get(address) ?? 1) - 1;
      if (left > 0) this.perAddress.set(address, left);
      else this.perAddress.delete(address);
    });
    return undefined;
  }
}
