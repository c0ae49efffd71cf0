// `npm run bench -- --markdown[=path]` (or BENCH_MARKDOWN=path): each section that ran replaces its own block of
// docs/benchmarks.md (between `<!-- bench:<section>:start -->` and `<!-- bench:<section>:end -->`) with what it
// printed, the command, the date, the commit and the machine's load. Sections that did not run keep their figures;
// the text around the blocks (how to read them) is written by hand. Earlier figures stay in git.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The sections of `npm run bench`, each with a block on the page (BENCH_ONLY takes these names). */
export const BENCH_SECTIONS = [
  'hot',
  'metering',
  'mcp',
  'cancel',
  'webhooks',
  'local',
  'analytics',
  'billing',
  'credits',
];

/** Where to write, from `--markdown`, `--markdown=path` or BENCH_MARKDOWN; undefined when not asked. */
export function markdownTarget(argv: string[], env: NodeJS.ProcessEnv, root: string): string | undefined {
  const flag = argv.find((a) => a === '--markdown' || a.startsWith('--markdown='));
  const given = flag?.includes('=') ? flag.slice('--markdown='.length) : env.BENCH_MARKDOWN;
  if (!flag && !given) return undefined;
  return path.resolve(root, given || 'docs/benchmarks.md');
}

/** The command that reproduces this run: the bench's settings from the environment, then npm run bench. */
export function benchCommand(env: NodeJS.ProcessEnv): string {
  const settings = Object.keys(env)
    .filter((k) => k.startsWith('BENCH_') && k !== 'BENCH_MARKDOWN')
    .concat(env.DB_COALESCE_IN_FLIGHT !== undefined ? ['DB_COALESCE_IN_FLIGHT'] : [])
    .sort()
    .map((k) => `${k}=${env[k]}`);
  return [...settings, 'npm run bench -- --markdown'].join(' ');
}

export interface SectionRun {
  section: string;
  output: string;
  command: string;
  /** ISO time the section started. */
  at: string;
  commit: string;
  load: [number, number];
}

export function sectionBlock(run: SectionRun): string {
  const when = `${run.at.slice(0, 10)} ${run.at.slice(11, 16)} UTC`;
  return [
    `<!-- bench:${run.section}:start -->`,
    `Measured ${when} by \`${run.command}\` at commit ${run.commit} (${os.cpus().length} cores; load average ` +
      `${run.load[0].toFixed(1)} at the start, ${run.load[1].toFixed(1)} at the end).`,
    '',
    '```text',
    run.output.replace(/\s+$/, ''),
    '```',
    `<!-- bench:${run.section}:end -->`,
  ].join('\n');
}

/** The page with each run's block replaced (or, for a section the page has no block for, added at the end). */
export function updatePage(page: string, runs: SectionRun[]): string {
  let out = page;
  for (const run of runs) {
    const start = `<!-- bench:${run.section}:start -->`;
    const end = `<!-- bench:${run.section}:end -->`;
    const i = out.indexOf(start);
    const j = out.indexOf(end);
    if (i >= 0 && j > i) out = out.slice(0, i) + sectionBlock(run) + out.slice(j + end.length);
    else out = `${out.replace(/\s*$/, '')}\n\n## ${run.section}\n\n${sectionBlock(run)}\n`;
  }
  return out;
}

/**
 * Tees what the bench prints into the section being measured. `begin(name)` starts a section; `end()` closes it;
 * `write(target)` updates the page with every section measured.
 */
export function sectionRecorder(root: string) {
  const runs: SectionRun[] = [];
  let current: SectionRun | undefined;
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
    if (current) current.output += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
    return write(chunk, ...rest);
  }) as typeof process.stdout.write;
  const commit = (() => {
    try {
      return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root }).toString().trim();
    } catch {
      return 'unknown';
    }
  })();
  return {
    begin(section: string) {
      this.end();
      current = {
        section,
        output: '',
        command: benchCommand({ ...process.env, BENCH_ONLY: section }),
        at: new Date().toISOString(),
        commit,
        load: [os.loadavg()[0], 0],
      };
    },
    end() {
      if (!current) return;
      current.load[1] = os.loadavg()[0];
      runs.push(current);
      current = undefined;
    },
    write(target: string) {
      this.end();
      if (!runs.length) return;
      fs.writeFileSync(target, updatePage(fs.readFileSync(target, 'utf8'), runs));
      write(`\n${runs.map((r) => r.section).join(', ')} written to ${path.relative(root, target)}\n`);
    },
  };
}
