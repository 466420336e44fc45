import { existsSync, readdirSync, readFileSync, statSync } from 'fs';
import { dirname, extname, join, relative } from 'path';
import { PROJECT_ROOT } from '../support/built';

/** README is the front door: what the gateway is, how to start it, a short walk, links into docs/. */
const README_MAX_LINES = 300;

const read = (path: string): string => readFileSync(join(PROJECT_ROOT, path), 'utf8');

/** Every file under `dir` (relative to the project root), sub-folders included. */
function filesUnder(dir: string): string[] {
  return readdirSync(join(PROJECT_ROOT, dir)).flatMap((name) => {
    const path = `${dir}/${name}`;
    return statSync(join(PROJECT_ROOT, path)).isDirectory() ? filesUnder(path) : [path];
  });
}

/** Markdown without its fenced code blocks (``` or ~~~, indented inside list items too). */
function withoutCodeBlocks(markdown: string): string {
  let fence: string | undefined;
  return markdown
    .split('\n')
    .filter((line) => {
      const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
      if (fence === undefined && marker) fence = marker[0];
      else if (fence !== undefined && marker?.[0] === fence) fence = undefined;
      else return fence === undefined;
      return false;
    })
    .join('\n');
}

/** `[text](target)` links and `[label]: target` definitions outside code blocks and code spans. */
function linksOf(markdown: string): string[] {
  const prose = withoutCodeBlocks(markdown).replace(/`[^`\n]*`/g, '');
  return [...[...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1]), ...[...prose.matchAll(/^\s*\[[^\]]+\]:\s*(\S+)/gm)].map((match) => match[1])];
}

/** A heading's anchor as GitHub makes it: the text as rendered, lower case, punctuation dropped, spaces as `-`. */
function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // links and images: their text
    .replace(/<[^>]+>/g, '') // inline HTML
    .replace(/`/g, '');
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors a Markdown page offers: its headings' (`-1`, `-2`... for repeats) and explicit `id`/`name` attributes. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const [, heading] of withoutCodeBlocks(markdown).matchAll(/^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/gm)) {
    const base = slug(heading);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  for (const [, id] of markdown.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(id);
  return anchors;
}

/** What is wrong with `target`, linked from `page`, or undefined when it resolves. */
function problemOf(page: string, target: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return 'leads off the repository';
  const [path, anchor] = target.split('#', 2) as [string, string | undefined];
  const file = path === '' ? page : relative(PROJECT_ROOT, join(PROJECT_ROOT, dirname(page), decodeURI(path)));
  if (file.startsWith('..')) return 'leads out of the repository';
  if (!existsSync(join(PROJECT_ROOT, file))) return `${file} does not exist`;
  if (anchor === undefined) return undefined;
  if (extname(file) !== '.md') return `an anchor into ${file}, which is not Markdown`;
  return anchorsOf(read(file)).has(decodeURIComponent(anchor)) ? undefined : `${file} has no heading #${anchor}`;
}

/**
 * README and docs/ are read on a fresh clone, often offline: every Markdown link must lead to a
 * file of the repository, and every anchor to a heading of its page, never to the specs we work
 * from (not shipped) or off site. docs/README.md is the index: every page of docs/ is linked
 * from it.
 */
describe('README.md and docs/', () => {
  const docs = filesUnder('docs');
  const pages = ['README.md', ...docs.filter((path) => path.endsWith('.md'))];

  it('finds the pages and their links', () => {
    expect(pages).toEqual(
      expect.arrayContaining([
        'README.md',
        'docs/README.md',
        'docs/architecture.md',
        'docs/llm-gateway.md',
        'docs/mcp.md',
        'docs/litemcp.md',
        'docs/utcp.md',
        'docs/configuration.md',
        'docs/guides/extending.md',
      ]),
    );
    expect(linksOf(read('README.md'))).toEqual(
      expect.arrayContaining(['docs/README.md', 'docs/llm-gateway.md', 'docs/asyncapi.yaml', 'docs/configuration.md']),
    );
    expect(linksOf('see [a](x.md) and `[b](y.md)`\n```md\n[c](z.md)\n```\n  ~~~\n  [d](w.md)\n  ~~~\n[e]: v.md')).toEqual(['x.md', 'v.md']);
    expect(problemOf('README.md', 'docs/mcp.md#streamable-http')).toBeUndefined();
    expect(problemOf('docs/mcp.md', '#the-envelope')).toBeUndefined();
    expect(problemOf('README.md', 'docs/mcp.md#no-such-heading')).toMatch(/has no heading/);
    expect(problemOf('README.md', 'docs/asyncapi.yaml#channels')).toMatch(/not Markdown/);
    expect(problemOf('README.md', 'docs/nothing.md')).toMatch(/does not exist/);
    expect(problemOf('docs/README.md', '../../elsewhere.md')).toMatch(/out of the repository/);
    expect(problemOf('README.md', 'https://example.com/')).toMatch(/off the repository/);
  });

  it('makes anchors the way GitHub does', () => {
    const anchors = anchorsOf(
      '# Title\n## Tokens file: permissions, rate limits\n### UTCP 0.1 at `/utcp`\n## [Linked](x.md) `code`\n## Title\n```sh\n# not a heading\n```',
    );
    expect([...anchors]).toEqual(['title', 'tokens-file-permissions-rate-limits', 'utcp-01-at-utcp', 'linked-code', 'title-1']);
  });

  it.each(pages)('%s links only to files of the repository, and to anchors they have', (page) => {
    const broken = linksOf(read(page))
      .map((target) => ({ target, problem: problemOf(page, target) }))
      .filter(({ problem }) => problem !== undefined);
    expect(broken).toEqual([]);
  });

  it('links every page of docs/ from the index, docs/README.md', () => {
    const linked = new Set(
      linksOf(read('docs/README.md'))
        .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target) && !target.startsWith('#'))
        .map((target) => relative(PROJECT_ROOT, join(PROJECT_ROOT, 'docs', decodeURI(target.split('#')[0])))),
    );
    expect(docs.filter((path) => path !== 'docs/README.md' && !linked.has(path))).toEqual([]);
  });

  it(`keeps README a front door, under ${README_MAX_LINES} lines`, () => {
    expect(read('README.md').split('\n').length).toBeLessThan(README_MAX_LINES);
  });

  it("keeps README's two commands: start on the embedded defaults, and the whole test suite", () => {
    const first = /```bash\n([\s\S]*?)```/.exec(read('README.md'))?.[1] ?? '';
    expect(
      first
        .split('\n')
        .map((line) => line.split('#')[0].trim())
        .filter(Boolean),
    ).toEqual(['npm install && npm start', 'npm test']);
    const scripts = JSON.parse(read('package.json')).scripts as Record<string, string>;
    expect(Object.keys(scripts)).toEqual(expect.arrayContaining(['start', 'test', 'pretest']));
  });

  it('shows in README the extension example the guide has and the suite builds (test/extending/extending-package.e2e-spec.ts)', () => {
    const tsBlocks = (markdown: string) => [...markdown.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1]);
    const guide = read('docs/guides/extending.md');
    const start = guide.indexOf('## Adding your own tools');
    const section = guide.slice(start, guide.indexOf('\n## ', start + 1));
    const [tested] = tsBlocks(section);
    expect(tested).toContain('@Tool(');
    const shown = tsBlocks(read('README.md')).find((block) => block.includes('@Tool('));
    expect(shown).toBe(tested);
  });
});
