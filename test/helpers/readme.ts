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
declare const baseUrl: string, KEY: string, APP: string, PUB: string, WEBHOOK_SECRET: string, rawBody: string, request: Req;
`;
