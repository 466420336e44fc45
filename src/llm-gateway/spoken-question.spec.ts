import { spokenAnswer, spokenQuestion, SpokenQuestion } from './spoken-question';

const ask = (properties: Record<string, unknown>) =>
  spokenQuestion({ message: 'Question?', requestedSchema: { type: 'object', properties } }) as SpokenQuestion;

describe('spoken questions (an upstream elicitation asked aloud)', () => {
  it('asks a form of one field or none, and says why it cannot ask the others', () => {
    expect(spokenQuestion({ message: 'Go on?', requestedSchema: { type: 'object', properties: {} } })).toEqual({ message: 'Go on?' });
    expect(ask({ name: { type: 'string' } })).toEqual({ message: 'Question?', field: { name: 'name', type: 'string' } });
    expect(spokenQuestion({ message: 'Both?', requestedSchema: { type: 'object', properties: { a: { type: 'string' }, b: { type: 'string' } } } })).toBe(
      'it asks for 2 fields at once, and a spoken answer fills one',
    );
    expect(spokenQuestion({ mode: 'url', message: 'Open this', url: 'https://example.com' })).toBe(
      'it asks the user to open a URL, which a voice session cannot show',
    );
    expect(spokenQuestion({ requestedSchema: {} })).toBe('it has no message to say');
    expect(spokenQuestion({ message: 'Where?', requestedSchema: { type: 'object', properties: { at: { type: 'object' } } } })).toBe(
      'its field "at" is not a string, number, boolean or choice',
    );
  });

  it('fills the field from the words, and declines what does not fill it rather than guess', () => {
    expect(spokenAnswer(ask({ people: { type: 'integer' } }), 'we are 4.6 people')).toEqual({ action: 'accept', content: { people: 5 } });
    expect(spokenAnswer(ask({ price: { type: 'number' } }), 'about 12,5')).toEqual({ action: 'accept', content: { price: 12.5 } });
    expect(spokenAnswer(ask({ people: { type: 'integer' } }), 'a few')).toEqual({ action: 'decline' });
    expect(spokenAnswer(ask({ people: { type: 'integer' } }), 'no, cancel that')).toEqual({ action: 'decline' });
    expect(spokenAnswer(ask({ name: { type: 'string' } }), '  No Name  ')).toEqual({ action: 'accept', content: { name: 'No Name' } });
    expect(spokenAnswer(ask({ ok: { type: 'boolean' } }), 'Yes please')).toEqual({ action: 'accept', content: { ok: true } });
    expect(spokenAnswer(ask({ ok: { type: 'boolean' } }), 'nein')).toEqual({ action: 'accept', content: { ok: false } });
    expect(spokenAnswer(ask({ ok: { type: 'boolean' } }), 'maybe')).toEqual({ action: 'decline' });
  });

  it('picks a choice by its value or its title', () => {
    const size = ask({
      size: {
        type: 'string',
        oneOf: [
          { const: 's', title: 'Small' },
          { const: 'l', title: 'Large' },
        ],
      },
    });
    expect(spokenAnswer(size, 'a large one')).toEqual({ action: 'accept', content: { size: 'l' } });
    expect(spokenAnswer(ask({ color: { type: 'string', enum: ['red', 'green'] } }), 'Green!')).toEqual({ action: 'accept', content: { color: 'green' } });
    expect(spokenAnswer(ask({ color: { type: 'string', enum: ['red', 'green'] } }), 'blue')).toEqual({ action: 'decline' });
  });

  it('confirms a form of no field unless the words refuse', () => {
    const confirm = spokenQuestion({ message: 'Proceed?', requestedSchema: { type: 'object', properties: {} } }) as SpokenQuestion;
    expect(spokenAnswer(confirm, 'go ahead')).toEqual({ action: 'accept', content: {} });
    expect(spokenAnswer(confirm, 'No')).toEqual({ action: 'decline' });
  });
});
