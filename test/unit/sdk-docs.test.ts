// Each SDK method's documentation (what an editor shows on hover) starts with a one-line summary and names its
// route, so `accounts.create` ↔ `POST /apps/{appId}/namespaces` is never a puzzle. Read from the generated file.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { OPERATIONS } from '../../packages/sdk/src/generated/api.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const generated = fs.readFileSync(path.join(root, 'packages/sdk/src/generated/api.ts'), 'utf8');
const pascal = (s: string) => s.replace(/(^|[._-])([a-z0-9])/g, (_m, _sep, c: string) => c.toUpperCase());

/** The interface `<Namespace>Api` and the JSDoc above it. */
function iface(ns: string): { doc: string; body: string } {
  const m = new RegExp(
    `(/\\*\\*(?:(?!\\*/)[\\s\\S])*\\*/)\\nexport interface ${pascal(ns)}Api \\{\\n([\\s\\S]*?)\\n\\}`,
  ).exec(generated);
  if (!m) throw new Error(`no documented interface ${pascal(ns)}Api`);
  return { doc: m[1], body: m[2] };
}

/** The JSDoc right above a method of an interface body, as lines without the comment markers. */
function methodDoc(body: string, method: string): string[] {
  const at = body.search(new RegExp(`\\n  ${method}\\(`));
  if (at < 0) throw new Error(`no method ${method}`);
  const before = body.slice(0, at);
  const open = before.lastIndexOf('/**');
  const close = before.lastIndexOf('*/');
  if (open < 0 || close < open || before.slice(close + 2).trim() !== '') throw new Error(`${method} has no JSDoc`);
  return before
    .slice(open + 3, close)
    .split('\n')
    .map((l) => l.replace(/^\s*\* ?/, '').trimEnd());
}

describe('SDK: every method documents its route and a one-line summary', () => {
  it('covers every operation', () => {
    expect(OPERATIONS.length).to.be.greaterThan(100);
  });

  it('each method: a summary line first, then `METHOD /path` as the route table has it', () => {
    const problems: string[] = [];
    for (const op of OPERATIONS) {
      const [ns, method] = op.name.split('.');
      const lines = methodDoc(iface(ns).body, method);
      const text = lines.join('\n').trim().split('\n');
      const summary = text[0];
      if (!summary || summary.startsWith('`')) problems.push(`${op.name}: no summary line (${summary})`);
      // The route, on the paragraph right after the summary.
      if (!text[2]?.startsWith(`\`${op.method} ${op.path}\``))
        problems.push(`${op.name}: route not named after the summary`);
    }
    expect(problems).to.deep.equal([]);
  });

  it('the example of the issue: accounts.create names POST /apps/{appId}/namespaces; accounts.* says where it lives', () => {
    const lines = methodDoc(iface('accounts').body, 'create');
    expect(lines.join('\n')).to.include('`POST /apps/{appId}/namespaces` (secret key)');
    expect(lines.find((l) => l.trim())).to.equal('Create an account');
    expect(iface('accounts').doc).to.include('`accounts.*`: the routes under `/apps/{appId}/namespaces`');
  });
});
