// The TypeScript examples of a README, gathered into one module that tsc can check.
import fs from 'node:fs';

/**
 * The `ts` examples of a README as one module: imports merged and hoisted, the first block at the top level (it
 * makes the clients the others use), every later block in a scope of its own, after `prelude` (what an example
 * takes from the reader's own program).
 */
export function readmeModule(file: string, prelude: string): string {
  const blocks = [...fs.readFileSync(file, 'utf8').matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
  const imports = new Map<string, Set<string>>();
  const bodies = blocks.map((block) =>
    block.replace(/^import \{([^}]*)\} from '([^']+)';\n/gm, (_m, names: string, from: string) => {
      const set = imports.get(from) ?? new Set<string>();
      for (const n of names.split(',')) if (n.trim()) set.add(n.trim());
      imports.set(from, set);
      return '';
    }),
  );
  return [
    ...[...imports].map(([from, names]) => `import { ${[...names].join(', ')} } from '${from}';`),
    prelude,
    bodies[0],
    ...bodies.slice(1).map((b) => `{\n${b}}`),
    'export {};',
  ].join('\n');
}

// What the READMEs' examples take from the reader's program (an Express app, the reader's own functions).
export const readmePrelude = `
declare const process: { env: Record<string, string | undefined> };
type Req = { body: Uint8Array; headers: Record<string, string | string[] | undefined> };
declare const express: { raw(options: { type: string }): unknown };
declare const app: { post(path: string, raw: unknown, handler: (req: Req, res: { sendStatus(s: number): unknown }) => unknown): void };
declare function showUpgrade(message: string, url: string | null | undefined): void;
declare function alreadyHandled(id: string): boolean;
declare function notify(accountId: string, entitlement: string): void;
declare function grantSeat(accountId: string, plan: string): void;
declare const KEY: string, APP: string, PUB: string, WEBHOOK_SECRET: string, rawBody: string, request: Req;
`;

/** One runnable example of a README: its code and, when a ```text block follows it, the output it promises. */
export interface ReadmeExample {
  line: number;
  code: string;
  output: string | null;
}

/** The TypeScript and JavaScript examples of a Markdown file, in order, each with the output block after it. */
export function readmeExamples(file: string): ReadmeExample[] {
  const text = fs.readFileSync(file, 'utf8');
  const out: ReadmeExample[] = [];
  const fence = /```(ts|typescript|js|mjs|javascript)\n([\s\S]*?)```(\s*```text\n([\s\S]*?)```)?/g;
  for (const m of text.matchAll(fence)) {
    out.push({ line: text.slice(0, m.index).split('\n').length, code: m[2], output: m[4] ?? null });
  }
  return out;
}

/** Printed between examples, so each example's output can be told apart. */
export const EXAMPLE_MARK = '\u001e readme-example';

/**
 * A README's examples as one program that runs them in order, as a reader pasting them one after another would:
 * imports hoisted, the first example at the top level (it makes the clients the others use), every later one in a
 * block of its own; a mark is printed before each.
 */
export function readmeProgram(examples: ReadmeExample[]): string {
  const imports = new Map<string, Set<string>>();
  const bodies = examples.map((e) =>
    e.code.replace(/^import \{([^}]*)\} from '([^']+)';\n/gm, (_m, names: string, from: string) => {
      const set = imports.get(from) ?? new Set<string>();
      for (const n of names.split(',')) if (n.trim()) set.add(n.trim());
      imports.set(from, set);
      return '';
    }),
  );
  const mark = (i: number) => `console.log(${JSON.stringify(`${EXAMPLE_MARK} ${i}`)});`;
  return [
    ...[...imports].map(([from, names]) => `import { ${[...names].join(', ')} } from '${from}';`),
    mark(0),
    bodies[0],
    ...bodies.slice(1).map((b, i) => `${mark(i + 1)}\n{\n${b}}`),
    'export {};',
  ].join('\n');
}

/** Each example's share of the program's output, by the marks. */
export function splitOutput(stdout: string, count: number): string[] {
  const parts: string[] = Array.from({ length: count }, () => '');
  let current = -1;
  for (const line of stdout.split('\n')) {
    const m = line.startsWith(EXAMPLE_MARK) ? Number(line.slice(EXAMPLE_MARK.length + 1)) : null;
    if (m !== null) current = m;
    else if (current >= 0) parts[current] += `${line}\n`;
  }
  return parts.map((p) => p.trimEnd());
}

/** Whether output matches what a README promises: line by line, `...` in a promised line standing for anything. */
export function outputMatches(actual: string, promised: string): boolean {
  const want = promised.trimEnd().split('\n');
  const got = actual.trimEnd().split('\n');
  if (want.length !== got.length) return false;
  return want.every((w, i) => {
    const re = new RegExp(
      `^${w
        .split('...')
        .map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
        .join('.*')}$`,
    );
    return re.test(got[i]);
  });
}
