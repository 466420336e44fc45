import type { ProtocolDeclaration } from '../core/protocols/protocol-registry';
import { XIAOZHI_SESSION_PATH } from './ota/configuration-answer';
import { XIAOZHI_PROTOCOL } from './xiaozhi-protocol-name';

/** xiaozhi devices as the core lists them (see `ProtocolRegistry`). */
export const XIAOZHI_DECLARATION: ProtocolDeclaration = {
  name: XIAOZHI_PROTOCOL,
  title: 'xiaozhi devices',
  summary: ({ http, ws }) => `${ws}${XIAOZHI_SESSION_PATH} (configuration at ${http}/xiaozhi/ota/)`,
};
