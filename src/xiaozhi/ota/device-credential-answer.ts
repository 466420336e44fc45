import type { CredentialDecision } from '../../fleet/activation/activation.service';
import type { ConfigurationAnswer } from './configuration-answer';

/**
 * The configuration answer as activation has it (`XIAOZHI_ACTIVATION=required`): no shared token
 * and no derived MQTT password, ever. An unbound device gets its `activation` and no session
 * section (the firmware then shows and speaks the code, and polls until it is bound); a bound
 * device its own secret as its `token` (or MQTT `password`) in the one answer that issues it, and
 * then sections without one: the firmware keeps what it stored (`Ota::CheckVersion` writes only
 * the fields it is sent), so the secret travels once.
 */
export function withDeviceCredential(answer: ConfigurationAnswer, decision: CredentialDecision): ConfigurationAnswer {
  const { websocket, mqtt, ...rest } = answer;
  if ('activation' in decision) return { ...rest, activation: decision.activation };
  const secret = 'secret' in decision ? decision.secret : undefined;
  if (mqtt) {
    const { password: _derived, ...section } = mqtt;
    return { ...rest, mqtt: secret === undefined ? section : { ...section, password: secret } };
  }
  if (websocket) return { ...rest, websocket: secret === undefined ? { url: websocket.url } : { url: websocket.url, token: secret } };
  return rest;
}
