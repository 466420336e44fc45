import { cleanForSpeech } from './clean-for-speech';
import { languageOfText, toSpokenForms } from './spoken-forms';

describe('toSpokenForms', () => {
  const sample = '25°C, 80%, 3‰, 60 km/h, 90m², 20~25, 北京 → 上海, A & B, 3/4';
  it.each([
    ['zh', '25摄氏度, 百分之80, 千分之3, 60公里每小时, 90平方米, 20到25, 北京到上海, A和B, 4分之3'],
    ['en', '25 degrees Celsius, 80 percent, 3 per mille, 60 kilometers per hour, 90 square meters, 20 to 25, 北京 to 上海, A and B, 3 over 4'],
    ['ja', '25度, 80パーセント, 3パーミル, 時速60キロ, 90平方メートル, 20から25, 北京から上海, AとB, 4分の3'],
    ['ko', '25도, 80퍼센트, 3퍼밀, 시속 60킬로미터, 90제곱미터, 20에서 25, 北京에서 上海, A와 B, 4분의 3'],
    ['de', '25 Grad Celsius, 80 Prozent, 3 Promille, 60 Kilometer pro Stunde, 90 Quadratmeter, 20 bis 25, 北京 nach 上海, A und B, 3 durch 4'],
    ['fr', '25 degrés Celsius, 80 pour cent, 3 pour mille, 60 kilomètres par heure, 90 mètres carrés, 20 à 25, 北京 vers 上海, A et B, 3 sur 4'],
    ['ru', '25 градусов Цельсия, 80 процентов, 3 промилле, 60 километров в час, 90 квадратных метров, 20 до 25, 北京 в 上海, A и B, 3 из 4'],
    ['pt', '25 graus Celsius, 80 por cento, 3 por mil, 60 quilômetros por hora, 90 metros quadrados, 20 a 25, 北京 para 上海, A e B, 3 sobre 4'],
    ['es', '25 grados Celsius, 80 por ciento, 3 por mil, 60 kilómetros por hora, 90 metros cuadrados, 20 a 25, 北京 a 上海, A y B, 3 sobre 4'],
    ['it', '25 gradi Celsius, 80 per cento, 3 per mille, 60 chilometri orari, 90 metri quadrati, 20 a 25, 北京 verso 上海, A e B, 3 su 4'],
  ] as const)('says the symbols in %s, digits left as digits', (language, spoken) => {
    expect(toSpokenForms(sample, language)).toBe(spoken);
  });

  it('leaves dates, paths and plain text alone', () => {
    expect(toSpokenForms('2026/11/23, a/b/c, 50 percent', 'en')).toBe('2026/11/23, a/b/c, 50 percent');
  });

  it('is part of cleaning for speech, in the language the text is written in by default', () => {
    expect(cleanForSpeech('**北京**今天 **18~25°C**，湿度 60%。')).toBe('北京今天 18到25摄氏度，湿度 百分之60。');
    expect(cleanForSpeech('Humidity is 60%.')).toBe('Humidity is 60 percent.');
    expect(languageOfText('こんにちは')).toBe('ja');
    expect(languageOfText('Привет')).toBe('ru');
  });
});
