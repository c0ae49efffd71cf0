import fs from 'node:fs';
import path from 'node:path';
import type { McpUiResourceMeta } from '@modelcontextprotocol/ext-apps';
import { RESOURCE_MIME_TYPE } from '@modelcontextprotocol/ext-apps/server';
import { PROJECT_ROOT } from '../root.js';

/**
 * MCP App UI resources (the MCP Apps extension, `@modelcontextprotocol/ext-apps`): components of packages/elements
 * as `ui://` pages a host shows in the conversation beside a tool's result. Each page is self-contained and light:
 * its own script (packages/elements/mcp-app/<name>.ts, built by `npm run build:elements` with only the components
 * the page shows, and the view side of the protocol, mcp-app/bridge.ts) is inlined, so the page loads nothing and
 * calls no API (what it needs more it asks the host for, `tools/call`). Each page is at most 150 KB
 * (test/api/mcp-apps.test.ts).
 */
export interface UiResource {
  uri: string;
  name: string;
  /** A short name for people (MCP's `title`). */
  title: string;
  description: string;
  /** The page's body: its components and the status line the view writes to (`#note`). */
  body: string;
  /** The tools whose results the page shows (their `_meta.ui.resourceUri`). */
  tools: string[];
}

const NOTE = '<p id="note" role="status"></p>';

export const UI_RESOURCES: UiResource[] = [
  {
    uri: 'ui://offerkit/account-balance',
    name: 'account-balance',
    title: 'Balance and usage',
    description:
      "An account's plan, its usage against its limits and its credits pools' balances (with their grants), " +
      'from get_account_access or get_credit_balance',
    body: `<offerkit-usage-meter></offerkit-usage-meter><section id="credits" aria-label="Credits"></section>${NOTE}`,
    tools: ['get_account_access', 'get_account_access_private', 'get_credit_balance'],
  },
  {
    uri: 'ui://offerkit/usage-meter',
    name: 'usage-meter',
    title: 'Usage meter',
    description: "An account's usage counters against its plan's limits, from get_account_usage",
    body: `<offerkit-usage-meter></offerkit-usage-meter>${NOTE}`,
    tools: ['get_account_usage'],
  },
  {
    uri: 'ui://offerkit/paywall',
    name: 'paywall',
    title: 'Paywall',
    description: 'The limit reached and the upgrade offer with its checkout link, from a usage call answered 402',
    body: `<offerkit-paywall></offerkit-paywall>${NOTE}`,
    tools: ['increment_usage', 'add_usage_amount'],
  },
  {
    uri: 'ui://offerkit/pricing-table',
    name: 'pricing-table',
    title: 'Pricing table',
    description: 'The plans and prices a buyer can choose from, from get_offer or list_pricing_cards',
    body: `<offerkit-pricing-table></offerkit-pricing-table>${NOTE}`,
    tools: ['get_offer', 'list_pricing_cards'],
  },
];

export { RESOURCE_MIME_TYPE };

/**
 * What every page declares in its `_meta.ui` (the extension's McpUiResourceMeta, on the `resources/list` entry and
 * on the `resources/read` content): no origin for the network, resources, frames or base URI (the page loads
 * nothing, and the host's sandbox can say so), no device permission, and no border from the host (the components draw their own cards).
 */
export const UI_RESOURCE_META: { ui: McpUiResourceMeta } = {
  ui: {
    csp: { connectDomains: [], resourceDomains: [], frameDomains: [], baseUriDomains: [] },
    permissions: {},
    prefersBorder: false,
  },
};

/**
 * The page's own policy, for hosts that apply none: inline script and style only (the page's), no network,
 * no frames, no forms, no base URI.
 */
const PAGE_CSP =
  "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; " +
  "base-uri 'none'; form-action 'none'; frame-src 'none'; connect-src 'none'";

/**
 * The `_meta` of a tool whose result a UI resource shows: `ui.resourceUri` (the extension's older flat key,
 * `ui/resourceUri`, is deprecated and left out: tools/list stays small).
 */
export function uiMetaOf(tool: string): Record<string, unknown> | undefined {
  const ui = UI_RESOURCES.find((r) => r.tools.includes(tool));
  return ui ? { ui: { resourceUri: ui.uri } } : undefined;
}

const dist = path.join(PROJECT_ROOT, 'packages', 'elements', 'dist');
const pages = new Map<string, { stamp: string; html: string }>();

/** Inline script text: `</script` inside it would end the element early. */
const inline = (code: string) => code.replace(/<\/script/gi, '<\\/script');

/** The page's look beside its components: the host's frame, the credits list of the balance page, the note. */
const STYLE =
  'html,body{margin:0}body{padding:8px;font-family:system-ui,sans-serif;color:#1f2937}#note:empty{display:none}' +
  '#credits:empty{display:none}#credits{max-width:32rem;margin-top:12px;padding:16px 20px;background:#fff;border:1px solid ' +
  '#d9dce3;border-radius:10px;box-sizing:border-box}#credits h2{font-size:1.25rem;margin:0 0 8px}#credits ul{' +
  'list-style:none;margin:0;padding:0}.pools>li{margin:10px 0}.row{display:flex;justify-content:space-between;' +
  'gap:1rem;flex-wrap:wrap}.name,.balance{font-weight:600}.muted,.grants{color:#5b6472;font-size:.9rem;margin:2px 0}';

/** A UI resource's page, built from its current script (`npm run build:elements`); kept until the script changes. */
export function uiPage(ui: UiResource): string {
  const file = path.join(dist, `mcp-app-${ui.name}.js`);
  let stamp: string;
  try {
    const stat = fs.statSync(file);
    stamp = `${stat.mtimeMs}:${stat.size}`;
  } catch {
    throw new Error('The components are not built: run npm run build:elements');
  }
  const known = pages.get(ui.uri);
  if (known?.stamp === stamp) return known.html;
  const html =
    '<!doctype html><html lang="en"><head><meta charset="utf-8">' +
    `<meta http-equiv="Content-Security-Policy" content="${PAGE_CSP}">` +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    `<title>offerkit ${ui.name}</title><style>${STYLE}</style></head><body>${ui.body}` +
    `<script type="module">${inline(fs.readFileSync(file, 'utf8'))}</script></body></html>`;
  pages.set(ui.uri, { stamp, html });
  return html;
}
