import { expect } from 'chai';
import { createTestApp } from '../helpers/factories.js';
import { patch } from '../helpers/http.js';
import { mcpPost, TOOLS_LIST } from '../helpers/mcp.js';
import { signInOAuth } from '../helpers/oauth.js';
import { testEnv } from '../helpers/servers.js';

/**
 * The size of `tools/list` as a client receives it over HTTP (the whole JSON-RPC answer: names, titles, descriptions,
 * input and typed output schemas, annotations), for every credential that may list tools: by default it names the
 * discovery tools, the core tools and the chosen toolsets' tools (none chosen: src/mcp/toolsets.ts), and stays within
 * what an agent host can afford (issue 43, item 3). The whole list (`toolsets=all`) is about 164k characters.
 */
const BUDGET = 20_000;

type Schema = { description?: string; properties?: Record<string, Schema>; items?: Schema; type?: unknown };
type Listed = { name: string; title?: string; description?: string; inputSchema: Schema; outputSchema?: Schema };

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'size-2026', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};
const MODERN = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' };
/** Every tool, whatever the app or connection chose (the request's own choice). */
const ALL = { 'X-MCP-Toolsets': 'all' };

describe('MCP tools/list size and descriptions', function () {
  this.timeout(90_000);

  it(`is at most ${BUDGET.toLocaleString('en-US')} characters by default for every credential, in both eras`, async () => {
    const app = await createTestApp('Tool list size');
    // Every level an OAuth connection can have: the app lets connections have Full access.
    expect((await patch(`/apps/${app.id}/mcp/settings`, testEnv().adminKey, { access_level: 'full' })).status).to.equal(
      200,
    );
    const credentials: [string, string][] = [
      ['secret key', app.api_key],
      ['admin key', testEnv().adminKey],
    ];
    for (const level of ['read', 'write', 'full'] as const)
      credentials.push([`OAuth ${level}`, (await signInOAuth(app.id, { level })).accessToken]);
    const sizes: Record<string, number> = {};
    for (const [who, token] of credentials) {
      const legacy = await mcpPost(app.id, TOOLS_LIST, token);
      const modern = await mcpPost(app.id, { ...TOOLS_LIST, params: { _meta: META } }, token, MODERN);
      for (const [era, res] of [
        ['2025', legacy],
        ['2026-07-28', modern],
      ] as const) {
        expect(res.status, `${who} ${era}: ${res.text.slice(0, 300)}`).to.equal(200);
        expect(res.body.result.tools.length, `${who} ${era}`).to.be.above(2);
        sizes[`${who} ${era}`] = res.text.length;
      }
    }
    // Account tokens and the publishable key cannot list tools at all (the spec's MCP authentication, rule 1).
    expect((await mcpPost(app.id, TOOLS_LIST, app.public_key)).status).to.equal(401);
    const over = Object.entries(sizes).filter(([, n]) => n > BUDGET);
    expect(over, JSON.stringify(sizes)).to.deep.equal([]);
    // The whole list is far above it: the budget is held by listing less, not by dropping what a tool says.
    const all = await mcpPost(app.id, TOOLS_LIST, app.api_key, ALL);
    expect(all.text.length).to.be.above(4 * BUDGET);
  });

  it('every tool has a title and a description for a model; every input property is described', async () => {
    const app = await createTestApp('Tool list words');
    const res = await mcpPost(app.id, TOOLS_LIST, app.api_key, ALL);
    expect(res.status, res.text).to.equal(200);
    const tools = res.body.result.tools as Listed[];
    expect(tools.length).to.be.above(60);
    const undescribed: string[] = [];
    const walk = (s: Schema, at: string) => {
      for (const [name, p] of Object.entries(s.properties ?? {})) {
        if (!p.description || p.description.trim().split(/\s+/).length < 4) undescribed.push(`${at}.${name}`);
        walk(p, `${at}.${name}`);
        if (p.items) walk(p.items, `${at}.${name}[]`);
      }
    };
    for (const t of tools) {
      if (!t.description || !/\.\s*$/.test(t.description)) undescribed.push(t.name);
      // A short name for people (hosts show it in place of the tool's name).
      if (!t.title || t.title.length > 60) undescribed.push(`${t.name} title`);
      walk(t.inputSchema, t.name);
      if (t.name !== 'call_tool') expect(t.outputSchema?.type, `${t.name} outputSchema`).to.equal('object');
      // No regex reaches a model: rules are in the descriptions (the service checks them and names the field).
      expect(JSON.stringify(t.inputSchema), t.name).not.to.include('"pattern"');
    }
    expect(undescribed).to.deep.equal([]);
    const titles = tools.map((t) => t.title);
    expect(new Set(titles).size, 'titles are distinct').to.equal(titles.length);
  });

  it('a field described for both create and update reads only its own half in each tool', async () => {
    const app = await createTestApp('Tool list halves');
    const tools = (await mcpPost(app.id, TOOLS_LIST, app.api_key, ALL)).body.result.tools as {
      name: string;
      inputSchema: Schema;
    }[];
    const note = (name: string) => tools.find((t) => t.name === name)!.inputSchema.properties!.note.description!;
    expect(note('create_plan')).to.match(/Omitted: none\.$/);
    expect(note('update_plan')).to.match(/Omitted: unchanged\.$/);
    // The update tool points at the create tool for what a field is, and says what leaving it out does there.
    expect(note('update_plan')).to.equal('As in create_plan. Omitted: unchanged.');
    const props = (name: string) => tools.find((t) => t.name === name)!.inputSchema.properties!;
    expect(props('update_plan').pricingCard).to.deep.equal({
      type: ['object', 'null'],
      description: 'As in create_plan. Omitted: unchanged; null removes it.',
    });
    expect(props('create_plan').pricingCard.properties).to.include.keys('monthlyPrice', 'yearlyPrice', 'currency');
    expect(props('create_plan').name.description).not.to.include('Required on create');
    expect(tools.find((t) => t.name === 'update_plan')!.inputSchema.properties!.name.description).not.to.include(
      'Required on create',
    );
  });

  it('types every output schema: each plan tool answers the plan, typed; lists type their items; the 402 body stays', async () => {
    const app = await createTestApp('Tool list shapes');
    type Typed = { name: string; title?: string; outputSchema: Schema & { anyOf?: Schema[] }; _meta?: unknown };
    const tools = (await mcpPost(app.id, TOOLS_LIST, app.api_key, ALL)).body.result.tools as Typed[];
    const answer = (name: string) => tools.find((t) => t.name === name)!.outputSchema.anyOf![0];
    expect(Object.keys(answer('get_plan').properties!)).to.include.members([
      'id',
      'name',
      'pricingCard',
      'entitlements',
    ]);
    expect(answer('get_plan').properties!.id).to.deep.equal({ type: 'string' });
    // Every tool answering the plan says so itself (no bare object pointing at another tool).
    for (const name of ['create_plan', 'update_plan', 'delete_plan', 'attach_plan_addon'])
      expect(answer(name), name).to.deep.equal(answer('get_plan'));
    // A list is under `data`, its items typed.
    expect(answer('list_plans').properties!.data.items).to.deep.equal({ type: 'object', ...answer('get_plan') });
    // The 402 body stays in the usage tool's schema: the agent hands over offer.checkout_url.
    expect(JSON.stringify(tools.find((t) => t.name === 'increment_usage')!.outputSchema)).to.include('"checkout_url"');
    // Every tool has its title (issue 43); no deprecated flat ui/resourceUri key.
    expect(tools.filter((t) => t.title === undefined).map((t) => t.name)).to.deep.equal([]);
    expect(tools.find((t) => t.name === 'get_offer')!._meta).to.deep.equal({
      ui: { resourceUri: 'ui://offerkit/pricing-table' },
    });
  });
});
