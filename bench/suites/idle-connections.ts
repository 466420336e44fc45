export interface IdleOptions {
  connections: number;
}

export async function benchIdleConnections(_options: IdleOptions): Promise<void> {
  throw new Error('idle: not written yet');
}
