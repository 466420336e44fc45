import type { ProtocolDeclaration } from '../core/protocols/protocol-registry';

/** LiteMCP as the core lists it (see `ProtocolRegistry`). */
export const LITEMCP_DECLARATION: ProtocolDeclaration = {
  name: 'litemcp',
  title: 'LiteMCP',
  summary: ({ ws }) => `${ws}/litemcp/<tool> (WebSocket, HTTP GET and POST)`,
};
