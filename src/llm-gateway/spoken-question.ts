/** One field of an MCP elicitation's `requestedSchema`, as far as a spoken answer can fill it. */
interface SpokenField {
  name: string;
  type: 'string' | 'number' | 'integer' | 'boolean';
  /** An enum's values, and their titles where the schema gives them. */
  options?: { value: string; title?: string }[];
}

/** What an upstream's `elicitation/create` asks, when a user can answer it aloud in one sentence. */
export interface SpokenQuestion {
  message: string;
  /** The one field the answer fills; none for a plain confirmation. */
  field?: SpokenField;
}

/** The answer of an elicitation, as MCP's `ElicitResult`. */
export type ElicitAnswer = { action: 'accept'; content: Record<string, string | number | boolean> } | { action: 'decline' };

const YES = /^(yes|yeah|yep|sure|ok(ay)?|correct|right|confirm(ed)?|是|好|对|可以|ja|oui|sí|si|sim|да|はい|네|예)\b/iu;
const NO = /^(no|nope|nah|cancel|stop|don'?t|不|别|否|nein|non|não|нет|いいえ|아니)/iu;

/**
 * The question an elicitation asks, or why it cannot be asked aloud: a spoken answer fills at
 * most one field (a string, a number, a yes or no, or one of an enum's values); URL-mode
 * elicitations and forms of several fields need a screen.
 */
export function spokenQuestion(params: Record<string, unknown> | undefined): SpokenQuestion | string {
  if (params?.mode === 'url') return 'it asks the user to open a URL, which a voice session cannot show';
  const message = typeof params?.message === 'string' ? params.message.trim() : '';
  if (message === '') return 'it has no message to say';
  const properties = (params?.requestedSchema as { properties?: Record<string, Record<string, unknown>> } | undefined)?.properties ?? {};
  const names = Object.keys(properties);
  if (names.length === 0) return { message };
  if (names.length > 1) return `it asks for ${names.length} fields at once, and a spoken answer fills one`;
  const [name] = names;
  const schema = properties[name];
  const values = (
    Array.isArray(schema.enum) ? schema.enum : Array.isArray(schema.oneOf) ? schema.oneOf.map((option: { const?: unknown }) => option?.const) : []
  ) as unknown[];
  const titles = (
    Array.isArray(schema.enumNames) ? schema.enumNames : Array.isArray(schema.oneOf) ? schema.oneOf.map((option: { title?: unknown }) => option?.title) : []
  ) as unknown[];
  if (values.length > 0) {
    return {
      message,
      field: {
        name,
        type: 'string',
        options: values.map((value, index) => ({ value: String(value), title: typeof titles[index] === 'string' ? titles[index] : undefined })),
      },
    };
  }
  if (schema.type === 'string' || schema.type === 'number' || schema.type === 'integer' || schema.type === 'boolean')
    return { message, field: { name, type: schema.type } };
  return `its field "${name}" is not a string, number, boolean or choice`;
}

/**
 * The user's spoken words as the elicitation's answer. A plain confirmation is accepted unless
 * the words refuse ("no", "cancel"); a yes-or-no field takes yes or no; any other field is filled
 * from the words, and words that do not fill it (no number, none of the choices, a refusal)
 * decline rather than send the upstream a guess.
 */
export function spokenAnswer(question: SpokenQuestion, words: string): ElicitAnswer {
  const text = words.trim();
  const { field } = question;
  if (!field) return NO.test(text) ? { action: 'decline' } : { action: 'accept', content: {} };
  const accept = (value: string | number | boolean): ElicitAnswer => ({ action: 'accept', content: { [field.name]: value } });
  if (field.type === 'boolean' && !field.options) return YES.test(text) ? accept(true) : NO.test(text) ? accept(false) : { action: 'decline' };
  if (field.type !== 'string' && NO.test(text)) return { action: 'decline' };
  if (field.options) {
    const lower = text.toLowerCase();
    const chosen = field.options.find(
      ({ value, title }) => lower.includes(value.toLowerCase()) || (title !== undefined && lower.includes(title.toLowerCase())),
    );
    return chosen ? accept(chosen.value) : { action: 'decline' };
  }
  switch (field.type) {
    case 'string':
      return text === '' ? { action: 'decline' } : accept(text);
    default: {
      const number = text.match(/-?\d+(?:[.,]\d+)?/)?.[0];
      if (number === undefined) return { action: 'decline' };
      const value = Number(number.replace(',', '.'));
      return accept(field.type === 'integer' ? Math.round(value) : value);
    }
  }
}
