// The docs move of issue 41 (item 2): the no-loss check finds what a new text lost, and the bench's --markdown
// rewrites only the blocks of the sections that ran.
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { benchCommand, markdownTarget, updatePage, type SectionRun } from '../../bench/markdown.js';
import { BEFORE_MOVE, BENCH_DROPPED, compare, extract } from '../../scripts/docs-move-check.js';

const root = path.resolve(import.meta.dirname, '../..');

describe('docs move: the no-loss check', () => {
  const old = [
    '## Usage',
    '',
    '- **Batches.** `BENCH_BATCH` (500) events, `npm run bench -- --markdown`, 35,200 events/s and 1.26x at 16',
    '  connections, p50 12.5 ms.',
  ].join('\n');

  it('extracts settings, commands and figures, a figure wrapped over two lines included', () => {
    const items = extract(old).map((i) => `${i.kind}:${i.text}`);
    expect(items).to.include.members([
      'setting:BENCH_BATCH',
      'command:npm run bench -- --markdown',
      'figure:35,200 events/s',
      'figure:1.26x',
      'figure:16 connections',
      'figure:12.5 ms',
    ]);
  });

  it('passes when the new text has them all, however wrapped, and names what is missing', () => {
    const moved = old.replace('at 16\n  connections', 'at 16 connections').replace('## Usage', '# 0001. Batches');
    expect(compare(old, moved).missing).to.deep.equal([]);
    const lost = compare(old, moved.replace('12.5 ms', '12 ms').replace('BENCH_BATCH', 'the batch size'));
    expect(lost.missing.map((m) => m.text)).to.deep.equal(['BENCH_BATCH', '12.5 ms']);
  });

  it('lets a listed section drop figures, never a setting or an npm run command', () => {
    const dropped = [{ section: /^Usage$/, reason: 'superseded' }];
    const r = compare(old, 'nothing left', dropped);
    expect(r.dropped.map((d) => d.item.kind)).to.have.members(['figure', 'figure', 'figure', 'figure']);
    expect(r.missing.map((m) => m.text)).to.have.members([
      'BENCH_BATCH',
      'npm run bench',
      'npm run bench -- --markdown',
    ]);
  });

  it('finds nothing lost between the files before the move and the records and page now', () => {
    const show = (file: string) =>
      execFileSync('git', ['show', `${BEFORE_MOVE}:${file}`], { cwd: root, maxBuffer: 1 << 26 }).toString();
    const dir = path.join(root, 'docs/decisions');
    const records = fs
      .readdirSync(dir)
      .map((f) => fs.readFileSync(path.join(dir, f), 'utf8'))
      .join('\n\n');
    const decisions = compare(show('docs/decisions.md'), records);
    expect(decisions.missing).to.deep.equal([]);
    expect(decisions.checked.setting).to.be.above(50);
    const bench = compare(
      show('docs/benchmarks.md'),
      fs.readFileSync(path.join(root, 'docs/benchmarks.md'), 'utf8'),
      BENCH_DROPPED,
    );
    expect(bench.missing).to.deep.equal([]);
  });
});

describe('docs move: npm run bench -- --markdown', () => {
  const run = (section: string, output: string): SectionRun => ({
    section,
    output,
    command: `BENCH_ONLY=${section} npm run bench -- --markdown`,
    at: '2026-11-28T15:22:00.000Z',
    commit: 'abc1234',
    load: [1.5, 2.25],
  });
  const page = [
    '# Benchmarks',
    'How to read the hot paths.',
    '<!-- bench:hot:start -->',
    'old hot figures',
    '<!-- bench:hot:end -->',
    'Notes kept by hand.',
    '<!-- bench:local:start -->',
    'old local figures',
    '<!-- bench:local:end -->',
  ].join('\n');

  it('replaces the blocks of the sections that ran, keeps the rest and the text around them', () => {
    const out = updatePage(page, [run('local', 'local: p50 87 ms\n')]);
    expect(out).to.include('old hot figures').and.include('Notes kept by hand.').and.not.include('old local figures');
    expect(out).to.include(
      'Measured 2026-11-28 15:22 UTC by `BENCH_ONLY=local npm run bench -- --markdown` at commit abc1234',
    );
    expect(out).to.include('load average 1.5 at the start, 2.3 at the end');
    expect(out).to.include('```text\nlocal: p50 87 ms\n```\n<!-- bench:local:end -->');
  });

  it('adds a section the page has no block for at the end', () => {
    const out = updatePage(page, [run('billing', 'quote p50 3 ms')]);
    expect(out.endsWith('<!-- bench:billing:end -->\n')).to.equal(true);
    expect(out).to.include('## billing');
  });

  it('is asked for by --markdown, --markdown=path or BENCH_MARKDOWN, and names the settings of the run', () => {
    expect(markdownTarget([], {}, '/r')).to.equal(undefined);
    expect(markdownTarget(['--markdown'], {}, '/r')).to.equal('/r/docs/benchmarks.md');
    expect(markdownTarget(['--markdown=x.md'], {}, '/r')).to.equal('/r/x.md');
    expect(markdownTarget([], { BENCH_MARKDOWN: '/tmp/b.md' }, '/r')).to.equal('/tmp/b.md');
    expect(benchCommand({ BENCH_ROUNDS: '4', BENCH_ONLY: 'hot', BENCH_MARKDOWN: 'x', PATH: '/bin' })).to.equal(
      'BENCH_ONLY=hot BENCH_ROUNDS=4 npm run bench -- --markdown',
    );
  });
});
