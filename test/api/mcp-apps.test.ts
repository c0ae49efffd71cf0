import { expect } from 'chai';
import {
  McpUiResourceCspSchema,
  McpUiResourceMetaSchema,
  McpUiResourcePermissionsSchema,
  RESOURCE_MIME_TYPE,
} from '@modelcontextprotocol/ext-apps';
import { build } from '../../packages/elements/build.js';
import { createTestApp } from '../helpers/factories.js';
import { ALL_TOOLSETS, connectMcp } from '../helpers/mcp.js';

/**
 * The MCP App pages as a host reads them through MCP (issue 43, item 4): each within 150 KB, each declaring in its
 * `_meta.ui` (on the resources/list entry and on the resources/read content) the CSP and permissions the Apps
 * extension specifies, checked with the extension's own schemas. How they render: test/browser/mcp-apps.test.ts.
 */
const BUDGET = 150_000;
const PAGES = [
  'ui://offerkit/account-balance',
  'ui://offerkit/usage-meter',
  'ui://offerkit/paywall',
  'ui://offerkit/pricing-table',
];
/** Exactly the extension's keys: an unknown key (a typo, a key of another version) fails. */
const metaSchema = McpUiResourceMetaSchema.extend({
  csp: McpUiResourceCspSchema.strict(),
  permissions: McpUiResourcePermissionsSchema.strict(),
}).strict();
const NOTHING_EXTERNAL = {
  csp: { connectDomains: [], resourceDomains: [], frameDomains: [], baseUriDomains: [] },
  permissions: {},
  prefersBorder: false,
};

describe('MCP App UI resources: size and _meta', function () {
  this.timeout(90_000);
  before(() => build());

  it(`each page is at most ${BUDGET.toLocaleString('en-US')} bytes and declares its CSP and permissions`, async () => {
    const app = await createTestApp('MCP Apps size');
    const { client } = await connectMcp(app.id, { key: app.api_key, headers: ALL_TOOLSETS }, 'apps-size');
    try {
      const listed = (await client.listResources()).resources.filter((r) => r.uri.startsWith('ui://'));
      expect(listed.map((r) => r.uri)).to.deep.equal(PAGES);
      for (const r of listed) {
        expect(r.mimeType).to.equal(RESOURCE_MIME_TYPE);
        expect(r.title, r.uri).to.be.a('string');
        const meta = (r._meta as { ui: unknown }).ui;
        expect(metaSchema.safeParse(meta).error, r.uri).to.equal(undefined);
        expect(meta).to.deep.equal(NOTHING_EXTERNAL);
      }
      const sizes: Record<string, number> = {};
      for (const uri of PAGES) {
        const [content] = (await client.readResource({ uri })).contents as {
          uri: string;
          mimeType: string;
          text: string;
          _meta?: { ui?: unknown };
        }[];
        expect(content.mimeType).to.equal(RESOURCE_MIME_TYPE);
        // Hosts read `_meta.ui` from the content first (the list's is the fallback).
        expect(metaSchema.safeParse(content._meta?.ui).error, uri).to.equal(undefined);
        expect(content._meta!.ui).to.deep.equal(NOTHING_EXTERNAL);
        sizes[uri] = Buffer.byteLength(content.text, 'utf8');
        // The page's own policy says the same for hosts that apply none.
        expect(content.text).to.include("connect-src 'none'");
        // Nothing from elsewhere: no script or stylesheet by URL, no absolute URL to fetch.
        expect(content.text).not.to.match(/<script[^>]+src=|<link[^>]+href=|<img[^>]+src=["']?https?:/i);
      }
      for (const uri of PAGES) expect(sizes[uri], `${uri}: ${sizes[uri]} bytes`).to.be.at.most(BUDGET);
      // One page's components, not the whole set: the usage meter's page holds no pricing table.
      const meter = (await client.readResource({ uri: 'ui://offerkit/usage-meter' })).contents[0] as { text: string };
      expect(meter.text).not.to.include('offerkit-pricing-table');
    } finally {
      await client.close();
    }
  });

  it('links each page from the tools whose results it shows', async () => {
    const app = await createTestApp('MCP Apps links');
    const { client } = await connectMcp(app.id, { key: app.api_key, headers: ALL_TOOLSETS }, 'apps-links');
    try {
      const tools = (await client.listTools()).tools;
      const linked = Object.fromEntries(
        tools
          .filter((t) => (t._meta as { ui?: unknown } | undefined)?.ui)
          .map((t) => [t.name, (t._meta as { ui: { resourceUri: string } }).ui.resourceUri]),
      );
      expect(linked).to.deep.equal({
        get_account_access: 'ui://offerkit/account-balance',
        get_account_access_private: 'ui://offerkit/account-balance',
        get_credit_balance: 'ui://offerkit/account-balance',
        get_account_usage: 'ui://offerkit/usage-meter',
        increment_usage: 'ui://offerkit/paywall',
        add_usage_amount: 'ui://offerkit/paywall',
        get_offer: 'ui://offerkit/pricing-table',
        list_pricing_cards: 'ui://offerkit/pricing-table',
      });
    } finally {
      await client.close();
    }
  });
});
