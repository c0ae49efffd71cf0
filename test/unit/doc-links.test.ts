// Every relative link and #anchor in the READMEs and docs/ points at a file that exists and a heading it has.
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

function markdownFiles(): string[] {
  const inDir = (dir: string) =>
    fs.existsSync(path.join(root, dir))
      ? fs
          .readdirSync(path.join(root, dir))
          .filter((f) => f.endsWith('.md'))
          .map((f) => `${dir}/${f}`)
      : [];
  const packages = fs.readdirSync(path.join(root, 'packages'));
  return [
    'README.md',
    ...inDir('docs'),
    ...packages
      .filter((p) => fs.existsSync(path.join(root, 'packages', p, 'README.md')))
      .map((p) => `packages/${p}/README.md`),
    ...packages.flatMap((p) => inDir(`packages/${p}/docs`)),
  ];
}

/** The text outside fenced code blocks, line by line (a fence's lines become empty, so line numbers hold). */
function prose(text: string): string[] {
  let fence: string | null = null;
  return text.split('\n').map((line) => {
    const open = /^\s*(`{3,}|~{3,})/.exec(line);
    if (open) {
      if (fence === null) fence = open[1][0];
      else if (open[1][0] === fence) fence = null;
      return '';
    }
    return fence === null ? line : '';
  });
}

/** GitHub's heading ids: lower case, punctuation dropped (but `-` and `_`), spaces as `-`, repeats numbered. */
export function headingSlugs(text: string): Set<string> {
  const slugs = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of prose(text)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const base = heading[1]
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link in a heading keeps only its text
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    slugs.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of text.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) slugs.add(m[1]);
  return slugs;
}

interface Link {
  file: string;
  line: number;
  target: string;
}

/** Inline links and images outside code (fenced blocks and `code spans`), skipping absolute URLs. */
export function relativeLinks(file: string, text: string): Link[] {
  const links: Link[] = [];
  prose(text).forEach((raw, i) => {
    const line = raw.replace(/`[^`]*`/g, '``');
    for (const m of line.matchAll(/!?\[(?:[^\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const target = m[1];
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: ...
      links.push({ file, line: i + 1, target });
    }
  });
  return links;
}

function brokenLinks(): string[] {
  const broken: string[] = [];
  const slugCache = new Map<string, Set<string>>();
  const slugsOf = (rel: string) => {
    if (!slugCache.has(rel)) slugCache.set(rel, headingSlugs(fs.readFileSync(path.join(root, rel), 'utf8')));
    return slugCache.get(rel)!;
  };
  for (const file of markdownFiles()) {
    for (const link of relativeLinks(file, fs.readFileSync(path.join(root, file), 'utf8'))) {
      const [pathPart, anchor] = link.target.split('#', 2) as [string, string | undefined];
      const rel = pathPart
        ? path.posix.normalize(path.posix.join(path.posix.dirname(file), decodeURI(pathPart)))
        : file;
      const where = `${link.file}:${link.line} (${link.target})`;
      if (rel.startsWith('../')) {
        broken.push(`${where}: leaves the repository`);
        continue;
      }
      if (!fs.existsSync(path.join(root, rel))) {
        broken.push(`${where}: no file ${rel}`);
        continue;
      }
      if (anchor !== undefined && rel.endsWith('.md') && !slugsOf(rel).has(decodeURIComponent(anchor))) {
        broken.push(`${where}: no heading #${anchor} in ${rel}`);
      }
    }
  }
  return broken;
}

describe('documentation links', () => {
  it('heading ids follow GitHub', () => {
    const slugs = headingSlugs(
      [
        '# offerkit',
        '## What `npm start` runs',
        '## Selling: offers, checkouts, subscriptions',
        '## Metering (issue 11 item 7, issue 17)',
        '## Plans × entitlements',
        '```sh',
        '# not a heading',
        '```',
        '## Tests',
        '### Tests',
      ].join('\n'),
    );
    expect([...slugs]).to.deep.equal([
      'offerkit',
      'what-npm-start-runs',
      'selling-offers-checkouts-subscriptions',
      'metering-issue-11-item-7-issue-17',
      'plans--entitlements',
      'tests',
      'tests-1',
    ]);
  });

  it('finds relative links and images outside code, not URLs', () => {
    const links = relativeLinks(
      'docs/x.md',
      [
        'See [the API](api.md#webhooks) and ![a picture](console/a.png), not [PayPal](https://paypal.com).',
        'Nor `[code](x.md)` nor',
        '```md',
        '[fenced](y.md)',
        '```',
        'But [here](#top).',
      ].join('\n'),
    );
    expect(links.map((l) => [l.line, l.target])).to.deep.equal([
      [1, 'api.md#webhooks'],
      [1, 'console/a.png'],
      [6, '#top'],
    ]);
  });

  it('every relative link and #anchor in README.md, docs/ and the packages resolves', () => {
    const files = markdownFiles();
    expect(files).to.include.members(['README.md', 'packages/sdk/README.md', 'packages/elements/README.md']);
    expect(brokenLinks()).to.deep.equal([]);
  });
});
