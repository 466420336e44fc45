import { existsSync, readdirSync, readFileSync } from 'fs';
import { dirname, join, relative } from 'path';
import { PROJECT_ROOT } from './support/built';

/**
 * README and docs/ are read on a fresh clone, often offline: every Markdown link must lead to
 * a file of the repository or an anchor, never to the specs we work from (not shipped) or off site.
 */
describe('links in README.md and docs/', () => {
  const pages = ['README.md', ...readdirSync(join(PROJECT_ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];

  /** `[text](target)` links outside code blocks and code spans. */
  function linksOf(markdown: string): string[] {
    const prose = markdown.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
    return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1]);
  }

  it('finds the pages and their links', () => {
    expect(pages).toEqual(expect.arrayContaining(['README.md', 'docs/architecture.md', 'docs/llm-gateway.md', 'docs/mcp.md', 'docs/litemcp.md', 'docs/utcp.md', 'docs/configuration.md']));
    expect(linksOf(readFileSync(join(PROJECT_ROOT, 'README.md'), 'utf8'))).toEqual(expect.arrayContaining(['docs/llm-gateway.md', 'docs/asyncapi.yaml', 'docs/configuration.md']));
    expect(linksOf('see [a](x.md) and `[b](y.md)`')).toEqual(['x.md']);
  });

  it.each(pages)('%s links only to files of the repository and anchors', (page) => {
    const broken = linksOf(readFileSync(join(PROJECT_ROOT, page), 'utf8')).filter((target) => {
      if (target.startsWith('#')) return false;
      if (/^[a-z]+:/i.test(target)) return true;
      const path = join(PROJECT_ROOT, dirname(page), target.split('#')[0]);
      return !existsSync(path) || relative(PROJECT_ROOT, path).startsWith('..');
    });
    expect(broken).toEqual([]);
  });
});
