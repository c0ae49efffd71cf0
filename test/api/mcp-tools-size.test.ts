import { expect } from 'chai';
import { createTestApp } from '../helpers/factories.js';
import { mcpPost, TOOLS_LIST } from '../helpers/mcp.js';

/**
 * The compact `tools/list` answer a client receives over HTTP with the secret key (every tool), in characters: 73,812
 * with `dry_run` on every write tool and the MCP App links (docs/decisions.md); not the issue's 45.5k. 74,249 with
 * the records' workflow ids in the output schemas (checkouts, reservations, pauses, plan changes, accounts).
 */
const BOUND = 74_500;

type Schema = { description?: string; properties?: Record<string, Schema>; items?: Schema; type?: unknown };

describe('MCP tools/list size and descriptions', function () {
  this.timeout(60_000);

  it(`is under ${BOUND.toLocaleString('en-US')} characters, and every tool and input property is described`, async () => {
    const app = await createTestApp('Tool list size');
    const res = await mcpPost(app.id, TOOLS_LIST, app.api_key);
    expect(res.status, res.text).to.equal(200);
    expect(res.text.length, 'tools/list characters').to.be.below(BOUND);
    const tools = res.body.result.tools as {
      name: string;
      description?: string;
      inputSchema: Schema;
      outputSchema: Schema;
    }[];
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
      walk(t.inputSchema, t.name);
      expect(t.outputSchema.type, `${t.name} outputSchema`).to.equal('object');
      // No regex reaches a model: rules are in the descriptions (the service checks them and names the field).
      expect(JSON.stringify(t.inputSchema), t.name).not.to.include('"pattern"');
    }
    expect(undescribed).to.deep.equal([]);
  });

  it('a field described for both create and update reads only its own half in each tool', async () => {
    const app = await createTestApp('Tool list halves');
    const tools = (await mcpPost(app.id, TOOLS_LIST, app.api_key)).body.result.tools as {
      name: string;
      inputSchema: Schema;
    }[];
    const note = (name: string) => tools.find((t) => t.name === name)!.inputSchema.properties!.note.description!;
    expect(note('create_plan')).to.match(/Omitted: none\.$/);
    expect(note('update_plan')).to.match(/Omitted: unchanged\.$/);
    expect(tools.find((t) => t.name === 'update_plan')!.inputSchema.properties!.name.description).not.to.include(
      'Required on create',
    );
  });
});
