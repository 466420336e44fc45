/**
 * The faces the firmware shows (`llm.emotion`) and the emoji a model writes for each, as the
 * xiaozhi servers pair them: the first of these emoji in an answer picks the face, since the
 * answer is cleaned of emoji before it is spoken.
 */
const EMOTIONS: Record<string, string> = {
  '😶': 'neutral',
  '🙂': 'happy',
  '😊': 'happy',
  '😀': 'happy',
  '😆': 'laughing',
  '😂': 'funny',
  '😔': 'sad',
  '😢': 'sad',
  '😠': 'angry',
  '😭': 'crying',
  '😍': 'loving',
  '😳': 'embarrassed',
  '😯': 'surprised',
  '😮': 'surprised',
  '😱': 'shocked',
  '🤔': 'thinking',
  '😉': 'winking',
  '😎': 'cool',
  '😌': 'relaxed',
  '🤤': 'delicious',
  '😘': 'kissy',
  '😏': 'confident',
  '😴': 'sleepy',
  '😜': 'silly',
  '🙄': 'confused',
};

/** The face of an answer that showed none. */
export const NEUTRAL = { emotion: 'neutral', text: '😶' } as const;

const EMOJI = /\p{Extended_Pictographic}/gu;

/** The face the first known emoji of `text` stands for, with that emoji; `undefined` when it has none. */
export function emotionOf(text: string): { emotion: string; text: string } | undefined {
  for (const [emoji] of text.matchAll(EMOJI)) {
    const emotion = EMOTIONS[emoji];
    if (emotion) return { emotion, text: emoji };
  }
  return undefined;
}
