import { spawnSync } from 'child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { PROJECT_ROOT } from '../support/built';

/**
 * scripts/test-prerequisites.sh, which `npm test` runs first, met the way a newcomer meets it:
 * on a machine where something is missing. The machine is a PATH holding only doubles of
 * dpkg-query, apt-get, sudo, id, redis-cli and redis-server (and of the C and Python tools when
 * there is no dpkg-query) that record their calls and behave like the real ones: apt-get
 * refuses to run unless root, installing a package makes dpkg-query report it, redis-cli answers
 * once redis-server has started. Nothing real is installed or started, and no port is used.
 */

const SCRIPT = join(PROJECT_ROOT, 'scripts', 'test-prerequisites.sh');
const PACKAGES = [
  'chromium',
  'gcc',
  'make',
  'cmake',
  'clang',
  'libclang-rt-dev',
  'libwebsockets-dev',
  'libcjson-dev',
  'valgrind',
  'python3-websockets',
  'python3-pocketsphinx',
  'pocketsphinx-en-us',
  'espeak-ng',
];
const REDIS_START = 'redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save  --appendonly no';

/**
 * Each double records its call, then acts; `$FAKE` is the machine's state folder. apt-get's
 * record says as which user it ran and with which DEBIAN_FRONTEND.
 */
const DOUBLES: Record<string, string> = {
  'dpkg-query': `
package="\${@: -1}"
while read -r line; do [ "$line" = "$package" ] && { printf 'install ok installed'; exit 0; }; done < "$FAKE/installed"
echo "dpkg-query: no packages found matching $package" >&2; exit 1`,
  'apt-get': `
echo "apt-get $* (uid $FAKE_UID, DEBIAN_FRONTEND=$DEBIAN_FRONTEND)" >> "$FAKE/calls"
[ "$FAKE_UID" = 0 ] || { echo "E: Could not open lock file - open (13: Permission denied)" >&2; exit 100; }
if [ "$1" = install ]; then
  for argument in "$@"; do
    case "$argument" in install | -*) ;; *) echo "$argument" >> "$FAKE/installed"; [ "$argument" = redis-server ] && /bin/cp "$FAKE/redis-server" "$FAKE/bin/";; esac
  done
fi
exit 0`,
  sudo: `
[ "$1" = -n ] && shift
[ -f "$FAKE/sudo-needs-password" ] && { echo "sudo: a password is required" >&2; exit 1; }
FAKE_UID=0 "$@"`,
  id: `[ "$1" = -u ] && echo "$FAKE_UID"`,
  'redis-cli': `[ -f "$FAKE/redis-running" ] && echo PONG || { echo "Could not connect to Redis at 127.0.0.1:6379: Connection refused" >&2; exit 1; }`,
  'redis-server': `[ -f "$FAKE/redis-fails" ] && exit 1; : > "$FAKE/redis-running"`,
  gcc: 'exit 0',
  make: 'exit 0',
  cmake: 'exit 0',
  clang: 'exit 0',
  valgrind: 'exit 0',
  python3: `
[ "$2" = 'import websockets' ] && [ -f "$FAKE/no-websockets" ] && exit 1
[ "$2" = 'import pocketsphinx' ] && [ -f "$FAKE/no-pocketsphinx" ] && exit 1
exit 0`,
  'espeak-ng': 'exit 0',
};

interface Machine {
  /** The doubles on PATH; by default the Debian ones. */
  doubles?: string[];
  installed?: string[];
  uid?: number;
  redisRunning?: boolean;
  sudoNeedsPassword?: boolean;
  redisFails?: boolean;
  noWebsockets?: boolean;
  noPocketsphinx?: boolean;
  env?: Record<string, string>;
}

interface Outcome {
  status: number | null;
  output: string;
  calls: string[];
  installed: string[];
}

const DEBIAN = ['dpkg-query', 'apt-get', 'sudo', 'id', 'redis-cli', 'redis-server'];

describe('the test command sets up what it needs (scripts/test-prerequisites.sh)', () => {
  const folders: string[] = [];
  afterAll(() => folders.forEach((folder) => rmSync(folder, { recursive: true, force: true })));

  function runOn(machine: Machine): Outcome {
    const fake = mkdtempSync(join(tmpdir(), 'test-prerequisites-'));
    folders.push(fake);
    const bin = join(fake, 'bin');
    mkdirSync(bin);
    const write = (path: string, body: string) =>
      writeFileSync(path, `#!/bin/bash\n${path.endsWith('apt-get') ? '' : 'echo "${0##*/} $*" >> "$FAKE/calls"\n'}${body.trim()}\n`, { mode: 0o755 });
    for (const name of machine.doubles ?? DEBIAN) write(join(bin, name), DOUBLES[name]);
    // Kept beside the PATH for apt-get to "install".
    write(join(fake, 'redis-server'), DOUBLES['redis-server']);
    for (const tool of ['env', 'sleep']) symlinkSync(spawnSync('/bin/sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).stdout.trim(), join(bin, tool));
    writeFileSync(join(fake, 'installed'), (machine.installed ?? PACKAGES).map((name) => `${name}\n`).join(''));
    writeFileSync(join(fake, 'calls'), '');
    const flags: [boolean | undefined, string][] = [
      [machine.redisRunning ?? true, 'redis-running'],
      [machine.sudoNeedsPassword, 'sudo-needs-password'],
      [machine.redisFails, 'redis-fails'],
      [machine.noWebsockets, 'no-websockets'],
      [machine.noPocketsphinx, 'no-pocketsphinx'],
    ];
    for (const [on, file] of flags) if (on) writeFileSync(join(fake, file), '');
    const result = spawnSync('/bin/bash', [SCRIPT], {
      cwd: PROJECT_ROOT,
      env: { PATH: bin, FAKE: fake, FAKE_UID: String(machine.uid ?? 0), ...machine.env },
      encoding: 'utf8',
      timeout: 20_000,
    });
    const lines = (file: string) =>
      readFileSync(join(fake, file), 'utf8')
        .split('\n')
        .filter((line) => line !== '');
    return { status: result.status, output: result.stdout + result.stderr, calls: lines('calls'), installed: lines('installed') };
  }

  const of = (calls: string[], program: string) => calls.filter((call) => call.startsWith(`${program} `) || call === program);

  it('does nothing and says nothing when everything is present and Redis answers', () => {
    const { status, output, calls } = runOn({});
    expect(status).toBe(0);
    expect(output).toBe('');
    expect(of(calls, 'dpkg-query')).toEqual(PACKAGES.map((name) => `dpkg-query -W -f=\${Status} ${name}`));
    expect(calls.filter((call) => /^(apt-get|sudo|redis-server) /.test(call))).toEqual([]);
    expect(of(calls, 'redis-cli')).toEqual(['redis-cli -h 127.0.0.1 -p 6379 ping']);
  });

  it('as root, installs exactly the missing packages, after apt-get update', () => {
    const { status, output, calls, installed } = runOn({ installed: PACKAGES.filter((name) => !['libwebsockets-dev', 'python3-websockets'].includes(name)) });
    expect(status).toBe(0);
    expect(output).toContain('installing libwebsockets-dev python3-websockets');
    expect(of(calls, 'apt-get')).toEqual([
      'apt-get update -qq (uid 0, DEBIAN_FRONTEND=noninteractive)',
      'apt-get install -y -qq libwebsockets-dev python3-websockets (uid 0, DEBIAN_FRONTEND=noninteractive)',
    ]);
    expect(of(calls, 'sudo')).toEqual([]);
    expect(installed).toEqual(expect.arrayContaining(PACKAGES));
  });

  it('not root and without sudo, stops at once with the command to run as root, installing and starting nothing', () => {
    const { status, output, calls } = runOn({
      uid: 1000,
      doubles: DEBIAN.filter((name) => name !== 'sudo'),
      installed: PACKAGES.filter((name) => name !== 'libcjson-dev'),
      redisRunning: false,
    });
    expect(status).not.toBe(0);
    expect(output).toContain('missing Debian packages: libcjson-dev');
    expect(output).toContain('\n  apt-get update && apt-get install -y libcjson-dev\n');
    expect(calls.filter((call) => /^(apt-get|redis-server) /.test(call))).toEqual([]);
  });

  it('not root, with a sudo that asks for a password, stops with the sudo command to run', () => {
    const { status, output, calls } = runOn({ uid: 1000, sudoNeedsPassword: true, installed: PACKAGES.filter((name) => name !== 'valgrind') });
    expect(status).not.toBe(0);
    expect(output).toContain('\n  sudo apt-get update && sudo apt-get install -y valgrind\n');
    expect(of(calls, 'sudo')).toEqual(['sudo -n true']);
    expect(of(calls, 'apt-get')).toEqual([]);
  });

  it('not root, with sudo, installs through sudo -n', () => {
    const { status, calls, installed } = runOn({ uid: 1000, installed: PACKAGES.filter((name) => !['cmake', 'chromium'].includes(name)) });
    expect(status).toBe(0);
    expect(of(calls, 'sudo')).toEqual([
      'sudo -n true',
      'sudo -n env DEBIAN_FRONTEND=noninteractive apt-get update -qq',
      'sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium cmake',
    ]);
    expect(of(calls, 'apt-get')).toEqual([
      'apt-get update -qq (uid 0, DEBIAN_FRONTEND=noninteractive)',
      'apt-get install -y -qq chromium cmake (uid 0, DEBIAN_FRONTEND=noninteractive)',
    ]);
    expect(installed).toEqual(expect.arrayContaining(PACKAGES));
  });

  it('starts the installed redis-server when Redis does not answer, and waits for its PONG', () => {
    const { status, output, calls } = runOn({ redisRunning: false });
    expect(status).toBe(0);
    expect(output).toContain('starting redis-server on 127.0.0.1:6379');
    expect(of(calls, 'redis-server')).toEqual([REDIS_START]);
    expect(of(calls, 'apt-get')).toEqual([]);
    expect(calls[calls.length - 1]).toBe('redis-cli -h 127.0.0.1 -p 6379 ping');
  });

  it('installs redis-server when Redis neither answers nor is installed, then starts it', () => {
    const { status, calls } = runOn({ redisRunning: false, doubles: DEBIAN.filter((name) => name !== 'redis-server') });
    expect(status).toBe(0);
    expect(of(calls, 'apt-get')).toEqual([
      'apt-get update -qq (uid 0, DEBIAN_FRONTEND=noninteractive)',
      'apt-get install -y -qq redis-server (uid 0, DEBIAN_FRONTEND=noninteractive)',
    ]);
    expect(of(calls, 'redis-server')).toEqual([REDIS_START]);
  });

  it('fails with what to do when redis-server does not start', () => {
    const { status, output } = runOn({ redisRunning: false, redisFails: true });
    expect(status).not.toBe(0);
    expect(output).toContain('redis-server did not start: run a Redis on 127.0.0.1:6379, or set REDIS_URL to one.');
  });

  it('leaves Redis alone when REDIS_URL names one', () => {
    const { status, calls } = runOn({ redisRunning: false, env: { REDIS_URL: 'redis://redis.internal:6379' } });
    expect(status).toBe(0);
    expect(calls.filter((call) => call.startsWith('redis-'))).toEqual([]);
  });

  it('needs no Chromium package when CHROMIUM_PATH names the packaged one, and fails on one that does not exist', () => {
    const packaged = runOn({ installed: PACKAGES.filter((name) => name !== 'chromium'), env: { CHROMIUM_PATH: '@sparticuz/chromium' } });
    expect(packaged.status).toBe(0);
    expect(of(packaged.calls, 'dpkg-query').some((call) => call.endsWith(' chromium'))).toBe(false);
    expect(of(packaged.calls, 'apt-get')).toEqual([]);
    const absent = runOn({ env: { CHROMIUM_PATH: '/nonexistent/chromium' } });
    expect(absent.status).not.toBe(0);
    expect(absent.output).toContain('CHROMIUM_PATH is /nonexistent/chromium, which is not an executable');
  });

  describe('without dpkg-query (not Debian)', () => {
    const ELSEWHERE = ['redis-cli', 'redis-server', 'id', 'gcc', 'make', 'cmake', 'clang', 'valgrind', 'python3', 'espeak-ng'];

    it('goes on when the programs, headers, libraries and Python module are there', () => {
      const { status, output, calls } = runOn({ doubles: ELSEWHERE });
      expect(status).toBe(0);
      expect(output).toBe('');
      expect(of(calls, 'clang')).toEqual([
        'clang -x c - -o /dev/null -lwebsockets',
        'clang -x c - -o /dev/null -lcjson',
        'clang -x c - -o /dev/null -fsanitize=fuzzer,address,undefined',
      ]);
      expect(of(calls, 'gcc')).toEqual(['gcc -x c - -o /dev/null -fsanitize=address,undefined']);
      expect(of(calls, 'python3')).toEqual(['python3 -c import websockets', 'python3 -c import pocketsphinx']);
    });

    it('stops, naming what is missing, and installs nothing', () => {
      const { status, output, calls } = runOn({
        doubles: ELSEWHERE.filter((name) => name !== 'cmake' && name !== 'espeak-ng'),
        noWebsockets: true,
        noPocketsphinx: true,
      });
      expect(status).not.toBe(0);
      expect(output).toContain('no dpkg-query, so nothing can be installed for you');
      expect(output).toContain("\n  cmake\n  espeak-ng\n  Python's websockets module\n  Python's pocketsphinx module");
      expect(calls.filter((call) => /^(apt-get|sudo|redis-server) /.test(call))).toEqual([]);
    });
  });

  it('is what npm test runs first, and what CI runs through npm test', () => {
    const scripts = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')).scripts as Record<string, string>;
    expect(scripts.pretest).toMatch(/^bash scripts\/test-prerequisites\.sh && /);
    const ci = readFileSync(join(PROJECT_ROOT, '.ci', 'run'), 'utf8');
    expect(ci).toMatch(/^npm test$/m);
    expect(ci).not.toMatch(/apt-get|redis-server|dpkg-query/);
    expect(existsSync(SCRIPT)).toBe(true);
  });
});
