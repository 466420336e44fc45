import type { ToolCallContext } from '../../core/tools/tool-definition';
import type { PushReceipts } from './push-receipts';
import type { PushState } from './push-state';

/** A push's answer as `device_say` gives it: with its receipt's id, when it has one. */
type Answered = { push_id?: string };

/**
 * `device_say`'s `wait_s`: the call stays open until every push's receipt is final, `waitS`
 * passes, or the call is cancelled, whichever comes first. Each state a receipt reaches is told
 * to the caller as progress (MCP `notifications/progress`, when the request carried a progress
 * token; `progress` counts the changes heard so far, so it only grows, and `message` says
 * `<device>: <state>`). Resolves with each answer and its receipt's `state` as it last was.
 */
export async function followReceipts<Answer extends Answered>(
  receipts: PushReceipts,
  answers: Answer[],
  waitS: number,
  context: Pick<ToolCallContext, 'signal' | 'caller'>,
): Promise<(Answer & { state?: PushState })[]> {
  const ids = answers.flatMap((answer) => (answer.push_id === undefined ? [] : [answer.push_id]));
  const signal = AbortSignal.any([context.signal, AbortSignal.timeout(waitS * 1000)]);
  let heard = 0;
  const last = await receipts.follow(ids, signal, (record) => {
    heard += 1;
    void context.caller?.progress?.({ progress: heard, message: `${record.device}: ${record.state}` }).catch(() => undefined);
  });
  return answers.map((answer) => {
    const record = answer.push_id === undefined ? undefined : last.get(answer.push_id);
    return record ? { ...answer, state: record.state } : answer;
  });
}
