// `npm run decisions -- <command>`: the decision records in docs/decisions/, one file per decision, and their index
// (docs/decisions/README.md, one line each, generated from the records).
//
//   add <file.md> [--blame <rev>:<path>]  turns sections written the old way (`## Area`, then `- **Title.** text`
//                                          bullets; or prose with **Context.** / **Decision.** / **Consequences.**)
//                                          into records numbered after the last one, and rewrites the index. Used once
//                                          for the move from docs/decisions.md (with --blame, for each record's
//                                          dates), and for a branch that still appended to docs/decisions.md.
//   supersede <old> <new>                 marks record <old> superseded by <new> (both numbers) and rewrites the index.
//   index                                  rewrites the index from the records (after editing a record by hand).
//   new <area> <title>                     writes an empty record from the template with the next number.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const DECISIONS_DIR = path.join(root, 'docs/decisions');
const MARKER = '<!-- The lines below are generated from the records: npm run decisions -- index -->';

export interface DecisionRecord {
  number: number;
  file: string;
  title: string;
  status: string;
  /** The index heading it sits under, and an optional sub-heading. */
  area: string;
  subArea?: string;
}

/** GitHub's heading id for a heading's text (as test/unit/doc-links.test.ts computes it). */
export function slug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '')
    .replace(/ /g, '-');
}

function fileSlug(title: string): string {
  const words = title
    .toLowerCase()
    .replace(/[`*_'’"]/g, '')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '')
    .split('-');
  let out = '';
  for (const w of words) {
    if ((out + '-' + w).length > 56 && out) break;
    out = out ? `${out}-${w}` : w;
  }
  return out || 'decision';
}

const pad = (n: number) => String(n).padStart(4, '0');

/** Reads every record's number, title, status and area from docs/decisions/NNNN-*.md. */
export function readRecords(dir = DECISIONS_DIR): DecisionRecord[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((f) => /^\d{4}-.*\.md$/.test(f))
    .sort()
    .map((file) => {
      const text = fs.readFileSync(path.join(dir, file), 'utf8');
      const title = /^# (\d{4})\. (.+)$/m.exec(text);
      const status = /^- Status: (.+)$/m.exec(text);
      const area = /^- Area: (.+)$/m.exec(text);
      if (!title || !status || !area) throw new Error(`${file}: needs "# NNNN. Title", "- Status:" and "- Area:"`);
      const areas = [...area[1].matchAll(/\[([^\]]+)\]\(README\.md#[^)]*\)/g)].map((m) => m[1]);
      if (!areas.length) throw new Error(`${file}: the area must link to its heading in README.md`);
      return {
        number: Number(title[1]),
        file,
        title: title[2],
        status: status[1],
        area: areas[0],
        ...(areas[1] ? { subArea: areas[1] } : {}),
      };
    });
}

/** The index's generated part: the areas in order of their first record, one line per record. */
export function indexLines(records: DecisionRecord[]): string[] {
  const out: string[] = [];
  let area: string | undefined;
  let sub: string | undefined;
  for (const r of [...records].sort((a, b) => a.number - b.number)) {
    if (r.area !== area) {
      out.push('', `## ${r.area}`, '');
      area = r.area;
      sub = undefined;
    }
    if (r.subArea !== sub) {
      if (r.subArea) out.push('', `### ${r.subArea}`, '');
      sub = r.subArea;
    }
    out.push(`- [${pad(r.number)} ${r.title}](${r.file}): ${r.status}`);
  }
  // One blank line between a list and the next heading, none doubled.
  return out
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .split('\n');
}

export function writeIndex(dir = DECISIONS_DIR): void {
  const index = path.join(dir, 'README.md');
  const head = fs.readFileSync(index, 'utf8').split(MARKER)[0];
  fs.writeFileSync(index, `${head}${MARKER}\n${indexLines(readRecords(dir)).join('\n')}\n`);
}

function areaLink(area: string, sub?: string): string {
  const a = `[${area}](README.md#${slug(area)})`;
  return sub ? `${a} / [${sub}](README.md#${slug(sub)})` : a;
}

function recordText(r: {
  number: number;
  title: string;
  date: string;
  status: string;
  area: string;
  subArea?: string;
  context: string;
  decision: string;
  consequences: string;
}): string {
  return [
    `# ${pad(r.number)}. ${r.title}`,
    '',
    `- Date: ${r.date}`,
    `- Status: ${r.status}`,
    `- Area: ${areaLink(r.area, r.subArea)}`,
    '',
    '## Context',
    '',
    r.context.trim(),
    '',
    '## Decision',
    '',
    r.decision.trim(),
    '',
    '## Consequences',
    '',
    r.consequences.trim(),
    '',
  ].join('\n');
}

/** Links written for docs/ point one folder up from docs/decisions/. */
function relink(text: string): string {
  return text.replace(/(\]\()(?![a-z][a-z0-9+.-]*:|#|\.\.\/)([^)\s]+)\)/gi, (_m, open: string, target: string) =>
    target.startsWith('decisions.md') ? `${open}README.md)` : `${open}../${target})`,
  );
}

interface Block {
  area: string;
  subArea?: string;
  /** Prose before the first bullet, split where it says "Decision(s)". */
  context: string[];
  lead: string[];
  items: { lines: number[]; text: string[] }[];
  /** Prose after the bullets (the section's consequences). */
  after: string[];
  /** Line numbers of the prose (for dates). */
  proseLines: number[];
}

/** The old layout's sections, each with its bullets; `## ` starts an area and `### ` a sub-area. */
export function parseSections(text: string): Block[] {
  const lines = text.split('\n');
  const blocks: Block[] = [];
  let area: string | undefined;
  let cur: Block | undefined;
  let state: 'pre' | 'items' | 'after' = 'pre';
  const start = (a: string, sub?: string) => {
    cur = { area: a, subArea: sub, context: [], lead: [], items: [], after: [], proseLines: [] };
    blocks.push(cur);
    state = 'pre';
  };
  lines.forEach((line, i) => {
    const h2 = /^## (.+)$/.exec(line);
    const h3 = /^### (.+)$/.exec(line);
    if (h2) return start((area = h2[1].trim()));
    if (h3 && area) return start(area, h3[1].trim());
    if (!cur) return; // the old file's title and introduction
    if (line.startsWith('- ')) {
      const bold = line.startsWith('- **');
      if (bold || !cur.items.length || state === 'after') {
        if (state === 'after') throw new Error(`line ${i + 1}: a bullet after the section's closing prose`);
        cur.items.push({ lines: [i + 1], text: [line.slice(2)] });
      } else {
        // A plain bullet continues the decision before it (a pointer, a note).
        const last = cur.items[cur.items.length - 1];
        last.lines.push(i + 1);
        last.text.push('', line.slice(2));
      }
      state = 'items';
      return;
    }
    if (state === 'items' && (line === '' || line.startsWith(' '))) {
      const last = cur.items[cur.items.length - 1];
      last.lines.push(i + 1);
      last.text.push(line.startsWith('  ') ? line.slice(2) : line);
      return;
    }
    if (state === 'items') state = 'after';
    if (state === 'after') {
      cur.after.push(line);
      cur.proseLines.push(i + 1);
      return;
    }
    if (cur.lead.length || /^(\*\*)?Decisions?(\.\*\*|:)/.test(line)) cur.lead.push(line);
    else cur.context.push(line);
    cur.proseLines.push(i + 1);
  });
  return blocks;
}

/** Splits prose at **Context.**, **Decision.** and **Consequences.** (the later sections' own labels). */
function labelled(prose: string): { context: string; decision: string; consequences: string } {
  const parts = { context: '', decision: '', consequences: '' };
  // Text before the first label (a date) belongs with the context.
  let key: keyof typeof parts = /\*\*(?:Context|Decision|Consequences)\.\*\*/.test(prose) ? 'context' : 'decision';
  for (const piece of prose.split(/(\*\*(?:Context|Decision|Consequences)\.\*\*)/)) {
    const label = /^\*\*(Context|Decision|Consequences)\.\*\*$/.exec(piece);
    if (label) key = label[1].toLowerCase() as keyof typeof parts;
    else parts[key] += piece;
  }
  parts.context = unlabel(parts.context);
  return parts;
}

/** The labels the old sections wrote their parts under (the record's headings say them now); dates are in Date. */
function unlabel(text: string): string {
  return text
    .trim()
    .replace(
      /^(?:\*?\d{4}-\d{2}-\d{2}\.\*?\s*|Date:? \d{4}-\d{2}-\d{2}\.\s*)?(?:Context(?: \(\d{4}-\d{2}-\d{2}\))?:\s*)?/,
      '',
    )
    .replace(/^(?:\*\*(?:Decisions?|Consequences)\.\*\*|(?:Decisions?|Consequences):)\s*/, '')
    .replace(/\s*Decisions?:$/, '')
    .replace(/^[a-z]/, (c) => c.toUpperCase());
}

const trimBlank = (xs: string[]) => xs.join('\n').replace(/^\n+|\n+$/g, '');

function blameDates(spec: string | undefined): (lines: number[]) => string {
  if (!spec) {
    const today = new Date().toISOString().slice(0, 10);
    return () => today;
  }
  const [rev, file] = spec.split(':');
  const out = execFileSync('git', ['blame', '--line-porcelain', rev, '--', file], {
    cwd: root,
    maxBuffer: 1 << 28,
  }).toString();
  const times: number[] = [];
  let time = 0;
  for (const line of out.split('\n')) {
    const m = /^committer-time (\d+)$/.exec(line);
    if (m) time = Number(m[1]);
    else if (line.startsWith('\t')) times.push(time);
  }
  const day = (t: number) => new Date(t * 1000).toISOString().slice(0, 10);
  return (lines) => {
    const ts = lines.map((n) => times[n - 1]).filter(Boolean);
    if (!ts.length) return day(Date.now() / 1000);
    const first = day(Math.min(...ts));
    const last = day(Math.max(...ts));
    return first === last ? first : `${first} (last changed ${last})`;
  };
}

function add(file: string, blame?: string): void {
  const text = fs.readFileSync(file, 'utf8');
  const dateOf = blameDates(blame);
  fs.mkdirSync(DECISIONS_DIR, { recursive: true });
  let next = Math.max(0, ...readRecords().map((r) => r.number)) + 1;
  const written: string[] = [];
  for (const b of parseSections(text)) {
    const where = b.subArea ? `${b.area}, ${b.subArea}` : b.area;
    const moved = `Moved from the section "${where}" of the former docs/decisions.md.`;
    const closing = unlabel(trimBlank(b.after));
    const write = (
      title: string,
      lines: number[],
      parts: { context: string; decision: string; consequences: string },
    ) => {
      const name = `${pad(next)}-${fileSlug(title)}.md`;
      const body = recordText({
        number: next,
        title,
        date: dateOf(lines),
        status: 'accepted',
        area: b.area,
        subArea: b.subArea,
        context: relink(unlabel(parts.context) || `Where the specification is silent (${where}). ${moved}`),
        decision: relink(parts.decision),
        consequences: relink(
          parts.consequences.trim() ||
            'Not written apart when this was decided; the decision above gives its reasons and effects.',
        ),
      });
      fs.writeFileSync(path.join(DECISIONS_DIR, name), body);
      written.push(name);
      next++;
    };
    if (!b.items.length) {
      // A section of prose only: one decision, split by its own labels where it has them.
      const parts = labelled(trimBlank([...b.context, ...b.lead, '', ...b.after]));
      write(b.subArea ?? b.area, b.proseLines, parts);
      continue;
    }
    const context = labelled(trimBlank(b.context));
    for (const item of b.items) {
      const first = item.text[0];
      const bold = /^\*\*(.+?)\*\*/.exec(first);
      const title = (bold ? bold[1] : first.split(/[.:]\s/)[0])
        .replace(/[.:,;]\s*$/, '')
        .replace(/^`([^`]+)`$/, '`$1`')
        .trim();
      const lead = unlabel(trimBlank(b.lead));
      write(title, [...item.lines, ...b.proseLines], {
        context: [context.context, context.decision].filter((x) => x.trim()).join('\n\n'),
        decision: [lead, trimBlank(item.text)].filter(Boolean).join('\n\n'),
        consequences: closing,
      });
    }
  }
  writeIndex();
  process.stdout.write(`${written.length} records written (${written[0]} to ${written[written.length - 1]})\n`);
}

function supersede(oldN: number, newN: number): void {
  const records = readRecords();
  const older = records.find((r) => r.number === oldN);
  const newer = records.find((r) => r.number === newN);
  if (!older || !newer) throw new Error(`no record ${!older ? oldN : newN}`);
  const p = path.join(DECISIONS_DIR, older.file);
  const text = fs.readFileSync(p, 'utf8');
  fs.writeFileSync(p, text.replace(/^- Status: .+$/m, `- Status: superseded by [${pad(newN)}](${newer.file})`));
  writeIndex();
}

function newRecord(area: string, title: string): void {
  const number = Math.max(0, ...readRecords().map((r) => r.number)) + 1;
  const name = `${pad(number)}-${fileSlug(title)}.md`;
  fs.writeFileSync(
    path.join(DECISIONS_DIR, name),
    recordText({
      number,
      title,
      date: new Date().toISOString().slice(0, 10),
      status: 'accepted',
      area,
      context: 'What the specification or the issue left open, and what forced a choice.',
      decision: 'What we do, in the words a reader searching for it would use.',
      consequences: 'What follows: costs, what it rules out, the tests that hold it.',
    }),
  );
  writeIndex();
  process.stdout.write(`docs/decisions/${name}\n`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const [command, ...args] = process.argv.slice(2);
  const blame = args.indexOf('--blame');
  if (command === 'add' && args[0]) add(args[0], blame >= 0 ? args[blame + 1] : undefined);
  else if (command === 'supersede' && args.length === 2) supersede(Number(args[0]), Number(args[1]));
  else if (command === 'index') writeIndex();
  else if (command === 'new' && args.length === 2) newRecord(args[0], args[1]);
  else {
    process.stderr.write(
      'usage: npm run decisions -- add <file.md> [--blame rev:path] | supersede <old> <new> | index | new <area> <title>\n',
    );
    process.exit(2);
  }
}
