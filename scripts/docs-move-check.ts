// `npm run docs:check-move`: nothing decided or measured was lost when docs/decisions.md became docs/decisions/ and
// docs/benchmarks.md a page of current figures (issue 41, item 2). Reads the old files from git at the commit before
// the move and checks that every setting (UPPER_SNAKE names), command (`npm run ...`, backticked command lines) and
// figure (a number with a unit, a ratio) in them is in the new text, whitespace aside.
//
// Decisions: everything must be in a record. Benchmarks: every setting and every `npm run` command must be on the
// page; a figure or a command line of an old section listed in BENCH_DROPPED may be missing (its figures were
// superseded by later ones; they stay in git), and the reason is printed. Exit 1 on anything else missing.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** main before the move. */
export const BEFORE_MOVE = 'faf55bf0fec8ed14885e38e43b253914551dd978';

export type Kind = 'setting' | 'command' | 'figure';
export interface Item {
  kind: Kind;
  text: string;
  /** The old section (## or ### heading) it was found under. */
  section: string;
}

const UNITS =
  'ms|µs|us|s|%|x|×|MB|KB|KiB|MiB|GiB|GB|B|req/s|events/s|deliveries/s|workflows/s|walks/s|calls/s|checks/s|' +
  'statements/s|/s|minutes|minute|hours|hour|days|day|seconds|second|characters|rows|connections|accounts|' +
  'events|levels|attempts|tools|cores|k|px';
const FIGURE = new RegExp(
  `(?<![\\w.])\\d[\\d,]*(?:\\.\\d+)?(?:[–-]\\d[\\d,]*(?:\\.\\d+)?)?\\s?(?:${UNITS})(?![\\w])`,
  'g',
);
const RATIO = /(?<![\w.])\d+(?:\.\d+)?x(?![\w])|(?<![\w.])\d+\s?\/\s?\d+(?:\.\d+)?(?![\w])/g;
const SETTING = /(?<![\w-])[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+(?![\w-])/g;
const NPM_RUN = /npm run [a-z][\w:-]*(?: -- [a-z][\w-]*)?/g;
const COMMAND_SPAN =
  /`((?:[A-Z][A-Z0-9_]*=\S*\s+)*(?:npm|npx|node|tsx|git|perf|python3|temporal|helm|go|psql|taskset|renice)\s[^`]+)`/g;

const squash = (s: string) => s.replace(/\s+/g, ' ');

/** The items of a Markdown text, each with the heading it sits under. */
export function extract(text: string): Item[] {
  const items: Item[] = [];
  let section = '(top)';
  // Paragraphs (blank-line separated) keep figures that wrap across lines together.
  for (const block of text.split(/\n\s*\n/)) {
    for (const line of block.split('\n')) {
      const h = /^#{2,3} (.+)$/.exec(line);
      if (h) section = h[1].trim();
    }
    const prose = squash(block.replace(/^#{1,6} .*$/gm, ''));
    const add = (kind: Kind, t: string) => items.push({ kind, text: squash(t).trim(), section });
    for (const m of prose.matchAll(SETTING)) add('setting', m[0]);
    for (const m of prose.matchAll(NPM_RUN)) add('command', m[0]);
    for (const m of prose.matchAll(COMMAND_SPAN)) add('command', m[1]);
    for (const m of prose.matchAll(FIGURE)) add('figure', m[0]);
    for (const m of prose.matchAll(RATIO)) add('figure', m[0]);
  }
  return items;
}

/** Old benchmark sections whose figures and command lines were superseded by the page's current ones. */
export const BENCH_DROPPED: { section: RegExp; reason: string }[] = [
  {
    section: /^2026-11-26 \((night|evening)\), MCP|^2026-11-26, MCP tools\/call|^MCP tools\/call beside the REST route/,
    reason: "earlier MCP runs: the page keeps the 2026-11-28 run and the last quiet run's medians",
  },
  {
    section: /^2026-11-26, the hot paths on the shipped defaults \(issue 29\)$|^2026-11-21, the development machine/,
    reason: "earlier hot-path runs: the page keeps the afternoon's run on the shipped defaults",
  },
  {
    section:
      /^Issue 17|^Metering: batch ingest|^What held it back|^The change: one statement|^`BENCH_|^What changed in the bench|^The same command again|^Effective access at 16|^Where a delivery|^Analytics|^Batch ingest|^Who waits|^Webhook deliveries|^Hot paths|^Idempotent replay|^Beside Temporal/,
    reason: 'issue 17 diary: the steps that led to the current figures (the page keeps the latest per section)',
  },
  {
    section: /^2026-11-26, a Temporal cluster beside the dev server/,
    reason: 'topology runs 1 and 2 in full and the faults run in detail: the page keeps run 3, run 4 and a summary',
  },
  {
    section: /^2026-11-28, MCP tools\/call with an OAuth token beside the secret key/,
    reason: 'the loaded runs of the OAuth door and their unexplained quiet cell: superseded by the quiet run of 22:54',
  },
  {
    section: /^2026-11-26, memory under 30 minutes/,
    reason: 'the earlier soak run at load 20 was inconclusive',
  },
  {
    section: /^2026-11-28, analytics over a year the roll-up has not reached/,
    reason: 'the side run at 1,000,000 rows and the comparison with issue 17 figures',
  },
  {
    section: /^Cancel sessions$/,
    reason: 'the first cancel-session run, made while another test suite shared the cores',
  },
  {
    section: /^\(top\)$/,
    reason: 'the method notes, shortened',
  },
  {
    section: /^Local evaluation/,
    reason: 'the first local run, superseded by the one `--markdown` wrote (both on the shared machine under load)',
  },
];

/** Whether an item is in the new text; the text is squashed (and stripped of spaces) once, not once per item. */
function presence(newText: string): (item: Item) => boolean {
  const hay = squash(newText);
  let bare: string | null = null;
  return (item) => {
    if (hay.includes(item.text)) return true;
    // A figure wrapped differently or with a thin space: compare without spaces.
    if (item.kind !== 'figure') return false;
    bare ??= hay.replace(/\s/g, '');
    return bare.includes(item.text.replace(/\s/g, ''));
  };
}

function dedupe(items: Item[]): Item[] {
  const seen = new Set<string>();
  return items.filter((i) => {
    const k = `${i.kind}\0${i.text}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

export interface Report {
  checked: Record<Kind, number>;
  missing: Item[];
  dropped: { item: Item; reason: string }[];
}

export function compare(oldText: string, newText: string, dropped: typeof BENCH_DROPPED = []): Report {
  const items = extract(oldText);
  const present = presence(newText);
  const report: Report = { checked: { setting: 0, command: 0, figure: 0 }, missing: [], dropped: [] };
  // An item is kept if it is anywhere in the new text; dropped only if every old section it was in may drop it.
  const bySection = new Map<string, Item[]>();
  for (const i of items) bySection.set(`${i.kind}\0${i.text}`, [...(bySection.get(`${i.kind}\0${i.text}`) ?? []), i]);
  for (const item of dedupe(items)) {
    report.checked[item.kind]++;
    if (present(item)) continue;
    const droppable =
      item.kind === 'figure' || (item.kind === 'command' && !/^npm run [\w:-]+( -- [\w-]+)?$/.test(item.text));
    const reasons = bySection
      .get(`${item.kind}\0${item.text}`)!
      .map((i) => dropped.find((d) => d.section.test(i.section))?.reason);
    if (droppable && reasons.every(Boolean)) report.dropped.push({ item, reason: reasons[0]! });
    else report.missing.push(item);
  }
  return report;
}

function gitShow(rev: string, file: string): string {
  return execFileSync('git', ['show', `${rev}:${file}`], { cwd: root, maxBuffer: 1 << 26 }).toString();
}

function main(): void {
  const rev = process.env.DOCS_MOVE_BEFORE ?? BEFORE_MOVE;
  const records = fs
    .readdirSync(path.join(root, 'docs/decisions'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => fs.readFileSync(path.join(root, 'docs/decisions', f), 'utf8'))
    .join('\n\n');
  const decisions = compare(gitShow(rev, 'docs/decisions.md'), records);
  const bench = compare(
    gitShow(rev, 'docs/benchmarks.md'),
    fs.readFileSync(path.join(root, 'docs/benchmarks.md'), 'utf8'),
    BENCH_DROPPED,
  );
  let failed = false;
  for (const [name, r] of [
    ['docs/decisions.md -> docs/decisions/', decisions],
    ['docs/benchmarks.md -> docs/benchmarks.md', bench],
  ] as const) {
    const c = r.checked;
    process.stdout.write(
      `${name}: ${c.setting} settings, ${c.command} commands, ${c.figure} figures checked; ` +
        `${r.missing.length} missing, ${r.dropped.length} dropped with a reason\n`,
    );
    const reasons = new Map<string, number>();
    for (const d of r.dropped) reasons.set(d.reason, (reasons.get(d.reason) ?? 0) + 1);
    for (const [reason, n] of reasons) process.stdout.write(`  dropped ${n}: ${reason}\n`);
    for (const m of r.missing) process.stdout.write(`  MISSING ${m.kind} "${m.text}" (from "${m.section}")\n`);
    if (r.missing.length) failed = true;
  }
  process.exit(failed ? 1 : 0);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) main();
