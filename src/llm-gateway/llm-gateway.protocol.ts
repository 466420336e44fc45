import type { ProtocolDeclaration } from '../core/protocols/protocol-registry';
import { LLM_PROTOCOL } from './llm-gateway.gateway';

/** The LLM gateway as the core lists it (see `ProtocolRegistry`). */
export const LLM_GATEWAY_DECLARATION: ProtocolDeclaration = {
  name: LLM_PROTOCOL,
  title: 'LLM gateway',
  summary: ({ ws }) => `${ws}/ (and ${ws}/llm)`,
};
