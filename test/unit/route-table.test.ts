import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { z } from 'zod';
import { buildOpenApi } from '../../src/http/openapi.js';
import { routes } from '../../src/http/routes.js';
import { toolsOf } from '../../src/mcp/tools.js';

const label = (r: { method: string; path: string }) => `${r.method} ${r.path}`;

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sourceFiles(p) : p.endsWith('.ts') ? [p] : [];
  });
}

describe('the route table', () => {
  it('documents a body for every answer: a response schema, or replies for pages and redirects', () => {
    const bare = routes.filter((r) => !r.response && !r.replies);
    // Routes that only ever throw (405 answers) need neither.
    expect(bare.map(label)).to.deep.equal(['GET /apps/:appId/mcp', 'DELETE /apps/:appId/mcp']);
  });

  it('response schemas describe the wire: no transforms or defaults (input and output agree)', () => {
    // Output schemas of objects also say `additionalProperties: false`; that is not a difference on the wire.
    const json = (s: z.ZodType, io: 'input' | 'output') =>
      JSON.stringify(z.toJSONSchema(s, { io, target: 'draft-2020-12', unrepresentable: 'any' })).replaceAll(
        ',"additionalProperties":false',
        '',
      );
    for (const r of routes) {
      const schemas = [r.response, ...Object.values(r.replies ?? {}).map((d) => d.schema)].filter(
        (s): s is z.ZodType => s !== undefined,
      );
      for (const s of schemas) expect(json(s, 'input'), label(r)).to.equal(json(s, 'output'));
    }
  });

  it('derives the 64 MCP tools of the spec from the routes that declare them, each name once', () => {
    const tools = toolsOf(routes);
    expect(tools).to.have.length(65); // the spec's 64, and change_subscription (issue 30)
    expect(new Set(tools.map((t) => t.name)).size).to.equal(65);
    for (const t of tools) {
      expect(t.route.mcp?.tool).to.equal(t.name);
      expect(t.route.path, t.name).to.match(/^\/apps\/:appId(\/|$)/);
    }
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    expect(byName.create_account.level).to.equal('write');
    expect(label(byName.create_account.route)).to.equal('POST /apps/:appId/namespaces');
    expect(byName.delete_plan.level).to.equal('full');
    expect(byName.get_account_usage.level).to.equal('read');
    expect(Object.keys(byName.merge_plan_meta.inputSchema.properties)).to.deep.equal(['planId', 'meta']);
    expect(Object.keys(byName.update_app.inputSchema.properties)).to.deep.equal(['name']);
    expect(Object.keys(byName.list_accounts.inputSchema.properties)).to.not.include('offer');
    expect(byName.send_test_event.annotations.openWorldHint).to.equal(true);
  });

  it('names each operation for the SDK once: `<resource>.<action>`, also its OpenAPI operationId', () => {
    const names = routes.map((r) => r.sdk);
    for (const r of routes) expect(r.sdk, label(r)).to.match(/^[a-z][A-Za-z]*\.[a-z][A-Za-z]*$/);
    const twice = names.filter((n, i) => names.indexOf(n) !== i);
    expect(twice, 'SDK names used by two routes').to.deep.equal([]);
    const doc = buildOpenApi(routes, { version: 'test' });
    const createAccount = doc.paths['/apps/{appId}/namespaces'].post as { operationId: string };
    expect(createAccount.operationId).to.equal('accounts.create');
    const byName = Object.fromEntries(routes.map((r) => [r.sdk, label(r)]));
    expect(byName['usage.add']).to.equal('POST /apps/:appId/namespaces/:accountId/usage/:entitlementId/add');
    expect(byName['access.get']).to.equal('GET /apps/:appId/namespaces/:accountId/plan');
    expect(byName['offers.checkout']).to.equal('POST /apps/:appId/offers/:offerId/checkout');
    expect(byName['cancelSessions.answer']).to.equal('POST /apps/:appId/cancel-sessions/:sessionId/answer');
  });

  it('is handed to the MCP server: only the app imports the table, so there is no import circle', () => {
    const root = path.resolve(import.meta.dirname, '../../src');
    const importers = sourceFiles(root)
      .filter((f) => /from '[./]*(http\/)?routes\.js'/.test(fs.readFileSync(f, 'utf8')))
      .map((f) => path.relative(root, f));
    expect(importers).to.deep.equal(['app.ts']);
  });
});
