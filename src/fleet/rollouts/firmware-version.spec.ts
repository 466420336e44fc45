import { firmwareVersionProblem, isNewerVersion, parseUserAgent, sameVersion } from './firmware-version';

describe('firmware versions as the xiaozhi firmware compares them', () => {
  it.each([
    ['1.0.1', '1.0.0', true],
    ['1.10.0', '1.9.9', true],
    ['2.0', '1.99.99', true],
    ['1.0.0.1', '1.0.0', true],
    ['1.0.0', '1.0.0', false],
    ['1.0', '1.0.0', false],
    ['0.9.9', '1.0.0', false],
    ['1.2.4', '1.2.3-rc1', true],
    ['1.2.3', 'v1.2.3', false],
  ])('%s is newer than %s: %s', (offered, current, newer) => {
    expect(isNewerVersion(offered, current)).toBe(newer);
  });

  it('finds the same version the same, even written with a suffix the firmware reads past', () => {
    expect(sameVersion('1.2.3', '1.2.3')).toBe(true);
    expect(sameVersion('1.2.3', '1.2.3-dev')).toBe(true);
    expect(sameVersion('1.2.3', '1.2.4')).toBe(false);
  });

  it.each(['', 'v1.2.3', '1.2.3-rc1', '1..2', '1.2.', 'latest', '1.2.3.4.5.6.7.8.9', '1234567890.1'])('refuses to offer %j', (version) => {
    expect(firmwareVersionProblem(version)).toMatch(/numbers separated by dots/);
  });

  it.each(['1', '2.4.2', '10.0.0.1'])('offers %j', (version) => {
    expect(firmwareVersionProblem(version)).toBeUndefined();
  });

  it('reads board and version from the User-Agent, and nothing from one that is not board/version', () => {
    expect(parseUserAgent('bread-compact-wifi/2.4.2')).toEqual({ board: 'bread-compact-wifi', version: '2.4.2' });
    expect(parseUserAgent('esp-box-3/1.0.0-dev')).toEqual({ board: 'esp-box-3', version: '1.0.0-dev' });
    expect(parseUserAgent('curl')).toEqual({});
    expect(parseUserAgent('/1.0')).toEqual({});
    expect(parseUserAgent(undefined)).toEqual({});
  });
});
