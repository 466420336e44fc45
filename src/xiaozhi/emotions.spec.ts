import { emotionOf } from './emotions';

describe('emotionOf', () => {
  it('names the face of the first known emoji, with that emoji', () => {
    expect(emotionOf('Sure 🤔 let me see 😊')).toEqual({ emotion: 'thinking', text: '🤔' });
    expect(emotionOf('Great news! 😆')).toEqual({ emotion: 'laughing', text: '😆' });
  });

  it('skips emoji it has no face for, and finds none in plain text', () => {
    expect(emotionOf('🚀 launched 😢')).toEqual({ emotion: 'sad', text: '😢' });
    expect(emotionOf('No face here.')).toBeUndefined();
  });
});
