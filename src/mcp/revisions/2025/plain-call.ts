import type { PlainCallForm } from '../direct-binder';
import { plainToolCall, talksToCaller } from '../direct-binder';

/**
 * The 2025 revisions' plain `tools/call`, which the direct binder answers: an id, a tool name, an
 * arguments object, and nothing else in its params (no `_meta`, so no progress token; no `task`),
 * of a tool that does not talk to its caller; its result is the SDK 1.x server's as it is.
 */
export const PLAIN_CALL_2025: PlainCallForm = {
  callOf(message) {
    const call = plainToolCall(message);
    return call?.params._meta === undefined ? call : undefined;
  },
  resultOf: (result) => result,
  takes: (tool) => !talksToCaller(tool),
};
