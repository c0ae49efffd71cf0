import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { operationParts, PASS_NAMES, passNames } from '../../scripts/contract.js';
import { cap, checks, closing, runHalf, split } from '../../scripts/test.js';
import { failureText } from '../helpers/reporter.cjs';

describe('npm test: the suite split in halves (scripts/test.ts)', () => {
  const files = [
    'test/a.test.ts',
    'test/browser/console.test.ts',
    'test/processes/outages.test.ts',
    'test/processes/startup.test.ts',
    'test/unit/x.test.ts',
    'test/z.test.ts',
  ];
  const passes = PASS_NAMES;

  it('puts every file and every fuzzer pass in exactly one half, files in name order', () => {
    const groups = split(files, passes, 2);
    expect(groups).to.have.length(2);
    expect(groups.flatMap((g) => g.files).sort()).to.deep.equal([...files].sort());
    expect(groups.flatMap((g) => g.passes).sort()).to.deep.equal([...passes].sort());
    for (const g of groups) expect(g.files).to.deep.equal([...g.files].sort());
  });

  it('balances the halves by measured time: they differ by no more than the longest single item', () => {
    const [a, b] = split(files, passes, 2);
    expect(Math.abs(a.seconds - b.seconds)).to.be.at.most(170);
    // The admin pass's parts are shared out: neither half runs them all.
    const admin = passes.filter((p) => p.startsWith('admin-'));
    expect(admin.length).to.be.greaterThan(2);
    for (const half of [a, b]) expect(admin.filter((p) => half.passes.includes(p))).to.not.deep.equal(admin);
  });

  it('CONTRACT_ONLY=admin still names the whole admin pass: every part of it', () => {
    expect(passNames('admin,secret')).to.deep.equal([...passes.filter((p) => p.startsWith('admin-')), 'secret']);
    expect(passNames('admin-2')).to.deep.equal(['admin-2']);
    expect(passNames('')).to.deep.equal(passes); // CONTRACT_ONLY empty: every pass (a half sets it, so not read here)
  });

  it("cuts the admin pass's operations into parts: each once, heaviest spread, the same parts every time", () => {
    const op = (id: string, fields: number) => ({
      operationId: id,
      'x-credentials': ['A'],
      requestBody: { properties: Object.fromEntries(Array.from({ length: fields }, (_, i) => [`f${i}`, {}])) },
    });
    const doc = { paths: { '/a': { post: op('big1', 200), get: op('small1', 1) }, '/b': { post: op('big2', 190) } } };
    for (let i = 0; i < 20; i++) doc.paths[`/s${i}` as '/a'] = { get: op(`s${i}`, 2) } as never;
    const ids = Object.values(doc.paths).flatMap((ops) =>
      Object.values(ops).map((o) => (o as { operationId: string }).operationId),
    );
    const parts = operationParts(doc, ids, 3);
    expect(parts.flat().sort()).to.deep.equal([...ids].sort());
    expect(parts.findIndex((p) => p.includes('big1'))).to.not.equal(parts.findIndex((p) => p.includes('big2')));
    expect(operationParts(doc, [...ids].reverse(), 3)).to.deep.equal(parts);
  });

  it('one group is the whole suite', () => {
    const [only] = split(files, passes, 1);
    expect(only.files).to.deep.equal([...files].sort());
    expect(only.passes.sort()).to.deep.equal([...passes].sort());
  });
});

describe('npm test: what it prints (scripts/test.ts, test/helpers/reporter.cjs)', function () {
  this.timeout(60_000);
  const fixtures = ['test/fixtures/reporter/sample.ts', 'test/fixtures/reporter/other.ts'];
  const args = ['--no-config', '-n', 'import=tsx', '--reporter', './test/helpers/reporter.cjs', ...fixtures];
  let dir: string;
  before(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'offerkit-runner-'))));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('a half prints a line per file; its log file keeps the whole output; its result adds up', async () => {
    const printed: string[] = [];
    const log = path.relative(process.cwd(), path.join(dir, 'half.log'));
    const { TEST_PROGRESS: _, ...env } = process.env;
    const half = await runHalf(env, log, (text) => printed.push(text), args);
    expect(half.code).to.equal(1);
    // Each line ends with the file's time and CPU, which depend on the machine's load: compared as their shape.
    expect(printed.join('').replace(/\(\d+\.\d s, \d+\.\d CPU-s\)/g, '(t s, c CPU-s)')).to.equal(
      '✗ test/fixtures/reporter/sample.ts: 1 passed, 1 failed, 1 skipped (t s, c CPU-s)\n' +
        '✔ test/fixtures/reporter/other.ts: 1 passed (t s, c CPU-s)\n',
    );
    expect(half.result).to.include({ passed: 2, failed: 1, skipped: 1 });
    // A file's CPU is what the part's processes used across it: some, and never negative.
    expect(Object.keys(half.result?.cpu ?? {})).to.deep.equal(fixtures);
    for (const c of Object.values(half.result?.cpu ?? {})) expect(c).to.be.at.least(0);
    expect(half.result?.failures).to.deep.equal(['fixture: one of each fails (sample.ts): one: expected 1 to equal 2']);
    expect(Object.keys(half.result?.files ?? {})).to.deep.equal(fixtures);
    const text = fs.readFileSync(log, 'utf8');
    expect(text).to.include('a line only the log file keeps').and.include('1) fixture: one of each');
    expect(text).to.include('tests: 2 passed, 1 failed, 1 skipped');
    expect(text, 'the progress marker is taken off').to.not.include('\u001e');
  });

  it('a half that dies before its results says so and shows the end of its log', async () => {
    const printed: string[] = [];
    const log = path.relative(process.cwd(), path.join(dir, 'dead.log'));
    const half = await runHalf(process.env, log, (text) => printed.push(text), [
      ...args,
      '--require',
      'no-such-module',
    ]);
    expect(half.code).to.not.equal(0);
    expect(half.result).to.equal(undefined);
    expect(printed.join('')).to.match(/ended with exit code \d+ and no results; the end of .*dead\.log/);
    expect(printed.join('')).to.include('no-such-module');
    expect(closing([half], 5)).to.match(/a half ended \(exit code \d+\) without its results/);
  });

  it('the static checks beside the suite run at nice 10 and say which failed', async () => {
    const failed = await checks(
      [
        // `nice` alone prints the niceness it runs at: the check's own, 10 above the runner's.
        { name: 'niced', command: 'sh', args: ['-c', `test "$(nice)" = ${Math.min(19, os.getPriority() + 10)}`] },
        { name: 'fails', command: 'sh', args: ['-c', 'echo why; exit 3'] },
      ],
      true,
    );
    expect(failed).to.deep.equal(['fails']);
    expect(
      await checks([{ name: 'not niced', command: 'sh', args: ['-c', `test "$(nice)" = ${os.getPriority()}`] }]),
    ).to.deep.equal([]);
  });

  it("a browser action that timed out is summed up with what it waited for and the call log's last lines", () => {
    // The shape of Playwright 1.5x's message for a click that never happened.
    const message = [
      'locator.click: Timeout 30000ms exceeded.',
      'Call log:',
      "  - waiting for getByRole('button', { name: 'Save MCP settings' })",
      '    - locator resolved to <button disabled type="button">…</button>',
      '  - attempting click action',
      '    2 × waiting for element to be visible, enabled and stable',
      '      - element is not enabled',
      '    - retrying click action',
      '    - waiting 20ms',
      '    55 × waiting for element to be visible, enabled and stable',
      '       - element is not enabled',
      '     - retrying click action',
      '       - waiting 500ms',
      '',
    ].join('\n');
    expect(failureText(new Error(message))).to.equal(
      'locator.click: Timeout 30000ms exceeded. | ' +
        "waiting for getByRole('button', { name: 'Save MCP settings' }) | " +
        '55 × waiting for element to be visible, enabled and stable | element is not enabled',
    );
    // Any other error: its first line.
    expect(failureText(new Error('expected 1 to equal 2\n+ expected - actual'))).to.equal('expected 1 to equal 2');
    expect(failureText('thrown text')).to.equal('thrown text');
  });

  it('the closing lines name the files that cost the most CPU, across the parts', () => {
    const part = (cpu: Record<string, number>) => ({
      code: 0,
      result: { passed: 1, failed: 0, skipped: 0, seconds: 10, failures: [], files: {}, cpu },
      log: 'a.log',
    });
    const text = closing([part({ 'a.ts': 5, 'b.ts': 40.25 }), part({ 'c.ts': 12 })], 60);
    expect(text).to.include('57 CPU-s in the files in all');
    const lines = text.split('\n').filter((l) => l.includes('CPU-s  '));
    expect(lines.map((l) => l.trim())).to.deep.equal([
      '40.3 CPU-s  [1] b.ts',
      '12.0 CPU-s  [2] c.ts',
      '5.0 CPU-s  [1] a.ts',
    ]);
  });

  it('a static check that failed beside the suite is named in the closing lines, the totals still last', () => {
    const result = { passed: 3, failed: 0, skipped: 0, seconds: 10, failures: [], files: {} };
    const text = closing([{ code: 0, result, log: 'a.log' }], 60, ['lint', 'types: console']);
    expect(text).to.include('failed checks (their output is above): lint, types: console');
    expect(text.trimEnd().split('\n').at(-1)).to.equal('tests: 3 passed, 0 failed, 0 skipped');
    expect(closing([{ code: 0, result, log: 'a.log' }], 60)).to.not.include('failed checks');
  });

  it('the closing lines end with the totals and stay short however many tests fail', () => {
    const failures = Array.from({ length: 500 }, (_, i) => `suite test ${i} (x.test.ts): ${'why '.repeat(100)}`);
    const files = Object.fromEntries(Array.from({ length: 80 }, (_, i) => [`test/f${i}.test.ts`, i]));
    const result = { passed: 10, failed: 500, skipped: 2, seconds: 100, failures, files };
    const text = closing(
      [
        { code: 1, result, log: 'a.log' },
        { code: 0, result: { ...result, failed: 0, failures: [] }, log: 'b.log' },
      ],
      600,
    );
    expect(text.trimEnd().split('\n').at(-1)).to.equal('tests: 20 passed, 500 failed, 4 skipped');
    expect(text).to.include('  20 passing (10m)').and.include('  500 failing').and.include('… and 470 more');
    expect(text).to.include('79.0 s  [1] test/f79.test.ts').and.include('79.0 s  [2] test/f79.test.ts');
    expect(text).to.include('75.0 s  [2] test/f75.test.ts').and.not.include('test/f74.test.ts');
    expect(Buffer.byteLength(text)).to.be.below(16_000);
  });

  it('cap keeps whole lines and says where the rest is', () => {
    const text = Array.from({ length: 100 }, (_, i) => `line ${i}`).join('\n');
    expect(cap('short\n', 100, 'x.log')).to.equal('short\n');
    const capped = cap(text, 50, 'x.log');
    expect(capped.split('\n')[0]).to.equal('line 0');
    expect(capped).to.match(/^line 0\n(line \d\n)+… \(\d+ more bytes in x\.log\)\n$/);
    expect(Buffer.byteLength(capped)).to.be.below(100);
  });
});
