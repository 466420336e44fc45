import type { ProtocolDeclaration } from '../core/protocols/protocol-registry';

/** UTCP as the core lists it (see `ProtocolRegistry`). */
export const UTCP_DECLARATION: ProtocolDeclaration = {
  name: 'utcp',
  title: 'UTCP',
  summary: ({ http, ws }) => `${http}/utcp (manual), ${ws}/utcp (provider), ${ws}/utcp/<tool>`,
};
