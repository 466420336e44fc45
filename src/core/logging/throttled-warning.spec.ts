import { Logger } from '@nestjs/common';
import { ThrottledWarning } from './throttled-warning';

describe('ThrottledWarning', () => {
  afterEach(() => jest.useRealTimers());

  it('writes the first warning, then at most one per period', () => {
    jest.useFakeTimers({ now: 1_000_000 });
    const logger = new Logger('Test');
    const warn = jest.spyOn(logger, 'warn').mockImplementation(() => undefined);
    const warning = new ThrottledWarning(logger, 10_000);
    warning.warn('down (1)');
    jest.advanceTimersByTime(9_999);
    warning.warn('down (2)');
    jest.advanceTimersByTime(1);
    warning.warn('down (3)');
    expect(warn.mock.calls.map(([message]) => message)).toEqual(['down (1)', 'down (3)']);
  });
});
