// Every relative link and #anchor in the READMEs and docs/ points at a file that exists and a heading it has.
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { indexLines, readRecords } from '../../scripts/decisions.js';
import { BENCH_SECTIONS } from '../../bench/markdown.js';

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
    ...inDir('docs/decisions'),
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
    expect(files).to.include.members([
      'docs/decisions/README.md',
      'docs/decisions/0001-credentials-are-checked-before-input.md',
    ]);
    expect(brokenLinks()).to.deep.equal([]);
  });

  describe('docs/decisions', () => {
    const dir = path.join(root, 'docs/decisions');
    const index = fs.readFileSync(path.join(dir, 'README.md'), 'utf8');
    const records = readRecords(dir);

    it('every record has a line in the index, and every line of the index names a record', () => {
      const files = fs.readdirSync(dir).filter((f) => f !== 'README.md');
      expect(
        files.every((f) => /^\d{4}-[a-z0-9-]+\.md$/.test(f)),
        files.join(' '),
      ).to.equal(true);
      const lines = index.split('\n').filter((l) => l.startsWith('- ['));
      const linked = lines.map((l) => /^- \[(\d{4}) [^\]]+\]\((\d{4}-[a-z0-9-]+\.md)\): /.exec(l)?.[2]);
      expect(linked).to.not.include(undefined);
      expect([...linked].sort()).to.deep.equal([...files].sort());
      // The generated part is exactly what the records say (titles, statuses, areas): `npm run decisions -- index`.
      expect(index.trimEnd().endsWith(indexLines(records).join('\n').trimEnd())).to.equal(true);
    });

    it('each record has a number of its own, a date, a status, and its context, decision and consequences', () => {
      expect(new Set(records.map((r) => r.number)).size).to.equal(records.length);
      for (const r of records) {
        const text = fs.readFileSync(path.join(dir, r.file), 'utf8');
        expect(r.file.startsWith(String(r.number).padStart(4, '0')), r.file).to.equal(true);
        expect(text, r.file).to.match(/^- Date: \d{4}-\d{2}-\d{2}/m);
        for (const part of ['Context', 'Decision', 'Consequences']) {
          expect(text, `${r.file}: ${part}`).to.match(new RegExp(`^## ${part}\n\n\\S`, 'm'));
        }
        const superseded = /^superseded by \[(\d{4})\]\((\d{4}-[a-z0-9-]+\.md)\)$/.exec(r.status);
        expect(r.status === 'accepted' || superseded !== null, `${r.file}: ${r.status}`).to.equal(true);
        if (superseded) {
          const newer = records.find((x) => x.file === superseded[2]);
          expect(newer?.number, r.file).to.equal(Number(superseded[1])).and.not.equal(r.number);
        }
      }
    });

    it('docs/decisions.md is a pointer to the folder', () => {
      const pointer = fs.readFileSync(path.join(root, 'docs/decisions.md'), 'utf8');
      expect(pointer.split('\n').length).to.be.below(20);
      expect(pointer).to.include('(decisions/README.md)');
    });
  });

  it('docs/benchmarks.md has one block for each section of npm run bench, which --markdown rewrites', () => {
    const page = fs.readFileSync(path.join(root, 'docs/benchmarks.md'), 'utf8');
    const starts = [...page.matchAll(/<!-- bench:([a-z]+):start -->/g)].map((m) => m[1]);
    const ends = [...page.matchAll(/<!-- bench:([a-z]+):end -->/g)].map((m) => m[1]);
    expect(starts).to.deep.equal(ends);
    expect([...starts].sort()).to.deep.equal([...BENCH_SECTIONS].sort());
    for (const s of starts) {
      const block = page.slice(page.indexOf(`<!-- bench:${s}:start -->`), page.indexOf(`<!-- bench:${s}:end -->`));
      expect(block, s).to.match(/(Measured \d{4}-\d{2}-\d{2}.*`[^`]*npm run bench[^`]*`|Not yet recorded)/s);
    }
  });
});
