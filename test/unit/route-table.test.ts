import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { z } from 'zod';
import { buildOpenApi } from '../../src/http/openapi.js';
import { routes } from '../../src/routes.js';
import { route } from '../../src/http/route.js';
import { toolsOf, type Tool } from '../../src/mcp/tools.js';
import { CORE_TOOLS, TOOL_INFO } from '../../src/mcp/toolsets.js';

/** Input properties (nested ones too) without a description of at least four words, and any `pattern`. */
function undescribed(tools: Tool[]) {
  const missing: string[] = [];
  const patterns: string[] = [];
  const walk = (tool: string, path: string, node: unknown) => {
    const n = node as { properties?: Record<string, unknown>; items?: unknown; pattern?: string };
    if (n?.pattern) patterns.push(`${tool}: ${path}`);
    for (const [k, v] of Object.entries(n?.properties ?? {})) {
      const d = (v as { description?: string }).description;
      if (!d || d.split(/\s+/).length < 4) missing.push(`${tool}: ${path}${k}`);
      walk(tool, `${path}${k}.`, v);
      walk(tool, `${path}${k}[].`, (v as { items?: unknown }).items);
    }
  };
  for (const t of tools) walk(t.name, '', t.inputSchema);
  return { missing, patterns };
}

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
    // The MCP endpoint's GET and DELETE (405) are no routes: the router answers them, as any method a path lacks.
    expect(bare.map(label)).to.deep.equal([]);
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

  // The 64 of the spec, create_upgrade_link, change_subscription, quote_subscription_change, get_account_timeline,
  // get_offer, and the credits tools get_credit_balance, grant_credits and create_topup_link.
  it('derives the 75 MCP tools, once each', () => {
    const tools = toolsOf(routes);
    expect(tools).to.have.length(75);
    expect(new Set(tools.map((t) => t.name)).size).to.equal(75);
    for (const t of tools) {
      expect(t.route.mcp?.tool).to.equal(t.name);
      expect(t.route.path, t.name).to.match(/^\/apps\/:appId(\/|$)/);
    }
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    expect(byName.create_account.level).to.equal('write');
    expect(label(byName.create_account.route)).to.equal('POST /apps/:appId/namespaces');
    expect(byName.delete_plan.level).to.equal('full');
    expect(byName.get_account_usage.level).to.equal('read');
    expect(Object.keys(byName.merge_plan_meta.inputSchema.properties)).to.deep.equal(['planId', 'meta', 'dry_run']);
    expect(Object.keys(byName.update_app.inputSchema.properties)).to.deep.equal(['name', 'dry_run']);
    expect(Object.keys(byName.list_accounts.inputSchema.properties)).to.not.include('offer');
    expect(byName.send_test_event.annotations.openWorldHint).to.equal(true);
  });

  it('describes every tool for a model: full sentences, every input property described, no patterns, an output schema', () => {
    const { missing, patterns } = undescribed(toolsOf(routes));
    for (const t of toolsOf(routes)) {
      // What it does, when to use it, what it returns: at least two sentences, each ending with a full stop.
      expect(t.description, t.name).to.match(/^[A-Z`].*[.!?]$/s);
      expect(t.description.split(/[.!?](\s|$)/).filter((x) => x.trim().length > 2).length, t.name).to.be.at.least(2);
      expect(t.description, t.name).to.match(/Use it|Returns|returns/);
      expect(t.outputSchema.type, t.name).to.equal('object');
      expect(JSON.stringify(t.inputSchema).length, `${t.name}: a long input schema`).to.be.below(3000);
    }
    expect(missing, 'tools with a property without a description').to.deep.equal([]);
    expect(toolsOf(routes).length).to.equal(75);
    expect(patterns, 'patterns belong in descriptions').to.deep.equal([]);
    // Each tool has its toolset and title in src/mcp/toolsets.ts, and the table names no other; the core is tools.
    const toolNames = toolsOf(routes).map((t) => t.name);
    expect(Object.keys(TOOL_INFO).sort()).to.deep.equal([...toolNames].sort());
    expect(toolNames).to.include.members([...CORE_TOOLS]);
    // The spec's names (MCP rule 4): the account id is `namespaceId` wherever a tool takes one, and one name for one
    // thing across sibling tools (no bare `id` naming another record beside a path parameter).
    const names = toolsOf(routes).flatMap((t) => Object.keys(t.inputSchema.properties));
    expect(names).to.include('namespaceId');
    expect(names.filter((n) => ['accountId', 'namespace', 'account', 'account_id'].includes(n))).to.deep.equal([]);
    const create = toolsOf(routes).find((t) => t.name === 'create_account')!;
    expect(create.inputSchema.required).to.deep.equal(['namespaceId']);
    for (const t of toolsOf(routes).filter((x) => x.name.startsWith('attach_')))
      expect(Object.keys(t.inputSchema.properties), t.name).to.not.include('id');
  });

  it('types every output schema to its fields: no bare object, no untyped field; errors and dry runs included', () => {
    type Node = Record<string, unknown> & { properties?: Record<string, Node>; items?: Node; anyOf?: Node[] };
    const untyped: string[] = [];
    const bare: string[] = [];
    const typedNode = (n: Node) => n.type !== undefined || n.anyOf !== undefined || 'const' in n || 'enum' in n;
    const walk = (n: Node, at: string) => {
      for (const [k, v] of Object.entries(n.properties ?? {})) {
        if (!typedNode(v)) untyped.push(`${at}.${k}`);
        walk(v, `${at}.${k}`);
      }
      if (n.items) {
        if (!typedNode(n.items)) untyped.push(`${at}[]`);
        walk(n.items, `${at}[]`);
      }
      for (const b of n.anyOf ?? []) walk(b, at);
    };
    for (const t of toolsOf(routes)) {
      const branches = t.outputSchema.anyOf as Node[];
      // The answer, a refusal, and a dry run for a write tool (the 402 body beside them for the usage tools).
      // A map (get_account_usage: entitlement id to count) types its values instead of naming fields.
      const named = (b: Node) =>
        Object.keys(b.properties ?? {}).length > 0 || typedNode((b.additionalProperties ?? {}) as Node);
      if (!branches.length || !branches.every(named)) bare.push(t.name);
      expect(
        branches.some((b) => b.properties?.error && b.properties?.status),
        `${t.name}: an error branch`,
      ).to.equal(true);
      expect(
        branches.some((b) => b.properties?.dry_run),
        `${t.name}: a dry-run branch`,
      ).to.equal(t.writes);
      walk(t.outputSchema as Node, t.name);
    }
    expect(bare, 'output schemas with a branch naming no fields').to.deep.equal([]);
    expect(untyped, 'output fields typed as anything ({})').to.deep.equal([]);
  });

  it('fails a tool whose input property has no description (the check above is not vacuous)', () => {
    const bare = route({
      method: 'GET',
      path: '/apps/:appId/things/:thingId',
      sdk: 'things.get',
      auth: ['S'],
      summary: 'Get a thing',
      tags: ['Things'],
      params: z.object({ appId: z.string(), thingId: z.string() }),
      query: z.object({ q: z.string().optional() }),
      response: z.object({ id: z.string() }),
      mcp: { tool: 'get_thing', level: 'R', use: 'Returns the thing.' },
      handler: () => ({ id: 'x' }),
    });
    expect(undescribed(toolsOf([bare])).missing).to.deep.equal(['get_thing: thingId', 'get_thing: q']);
    const described = route({
      ...bare,
      params: z.object({ appId: z.string(), thingId: z.string().describe('The thing id, e.g. `t1`.') }),
      query: z.object({ q: z.string().optional().describe('Text to find, e.g. `red`. Omitted: all things.') }),
    } as Parameters<typeof route>[0]);
    expect(undescribed(toolsOf([described])).missing).to.deep.equal([]);
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
