import { advance, isFinal, mayMove, newRecord, PUSH_STATES, PushState, reminderPushId, statesBefore } from './push-state';

const push = () => newRecord({ id: 'push-1', device: 'kitchen', kind: 'say', by: 'alice' }, Date.parse('2026-11-28T10:00:00Z'));

describe('the push state machine', () => {
  it('goes queued → sent → spoken, each step in the history with its time', () => {
    const sent = advance(push(), { state: 'sent' }, Date.parse('2026-11-28T10:00:01Z'))!;
    const spoken = advance(sent, { state: 'spoken' }, Date.parse('2026-11-28T10:00:03Z'))!;
    expect(spoken.state).toBe('spoken');
    expect(spoken.history).toEqual([
      { state: 'queued', at: '2026-11-28T10:00:00.000Z' },
      { state: 'sent', at: '2026-11-28T10:00:01.000Z' },
      { state: 'spoken', at: '2026-11-28T10:00:03.000Z' },
    ]);
  });

  it('keeps why a push was cut, and until when a held one waits', () => {
    const held = advance(push(), { state: 'held', expiresAt: 5000 })!;
    expect(held.expiresAt).toBe(5000);
    const cut = advance(advance(held, { state: 'sent' })!, { state: 'interrupted', reason: 'barge_in' })!;
    expect(cut.history.map((step) => [step.state, step.reason])).toEqual([
      ['queued', undefined],
      ['held', undefined],
      ['sent', undefined],
      ['interrupted', 'barge_in'],
    ]);
  });

  it.each<[PushState, PushState]>([
    ['queued', 'spoken'], // never spoken without being sent
    ['sent', 'held'],
    ['sent', 'refused'],
    ['held', 'queued'],
  ])('refuses %s → %s', (from, to) => {
    expect(mayMove(from, to)).toBe(false);
  });

  it('never leaves a final state, and never enters a state twice (the history is bounded)', () => {
    for (const state of PUSH_STATES.filter(isFinal)) for (const to of PUSH_STATES) expect(mayMove(state, to)).toBe(false);
    for (const state of PUSH_STATES) expect(mayMove(state, state)).toBe(false);
    // The longest path through the machine.
    let record = push();
    for (const state of ['held', 'sent', 'interrupted'] as const) record = advance(record, { state })!;
    expect(record.history).toHaveLength(4);
    expect(advance(record, { state: 'spoken' })).toBeUndefined();
  });

  it('names the states a move may come from, for the stores to check atomically', () => {
    expect(statesBefore('spoken')).toEqual(['sent']);
    expect(statesBefore('sent')).toEqual(['queued', 'held']);
    expect(statesBefore('queued')).toEqual([]);
  });

  it("gives a reminder's push the same id through its retries", () => {
    expect(reminderPushId('rem_0123456789abcdef')).toBe('reminder-rem_0123456789abcdef');
  });
});
