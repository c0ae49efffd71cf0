import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { RESOURCE_MIME_TYPE } from '@modelcontextprotocol/ext-apps/server';

/**
 * MCP App UI resources (the MCP Apps extension, `@modelcontextprotocol/ext-apps`): components of packages/elements
 * as `ui://` pages a host shows in the conversation beside a tool's result. Each page is self-contained: the
 * components' bundle and the view's script (mcp-app/view.ts: the extension's client side, which takes the tool
 * result from the host and fills the component) are inlined, so the page loads nothing and calls no API.
 */
export interface UiResource {
  uri: string;
  name: string;
  description: string;
  /** The component the page holds. */
  element: string;
  /** The tools whose results the page shows (their `_meta.ui.resourceUri`). */
  tools: string[];
}

export const UI_RESOURCES: UiResource[] = [
  {
    uri: 'ui://offerkit/usage-meter',
    name: 'usage-meter',
    description: "An account's plan and usage against its limits, from get_account_access",
    element: 'offerkit-usage-meter',
    tools: ['get_account_access', 'get_account_access_private'],
  },
  {
    uri: 'ui://offerkit/paywall',
    name: 'paywall',
    description: 'The limit reached and the upgrade offer with its checkout link, from a usage call answered 402',
    element: 'offerkit-paywall',
    tools: ['increment_usage', 'add_usage_amount'],
  },
  {
    uri: 'ui://offerkit/pricing-table',
    name: 'pricing-table',
    description: 'The plans and prices a buyer can choose from, from get_offer or list_pricing_cards',
    element: 'offerkit-pricing-table',
    tools: ['get_offer', 'list_pricing_cards'],
  },
];

export { RESOURCE_MIME_TYPE };

/**
 * The `_meta` of a tool whose result a UI resource shows: `ui.resourceUri` (the extension's older flat key,
 * `ui/resourceUri`, is deprecated and left out: tools/list stays small).
 */
export function uiMetaOf(tool: string): Record<string, unknown> | undefined {
  const ui = UI_RESOURCES.find((r) => r.tools.includes(tool));
  return ui ? { ui: { resourceUri: ui.uri } } : undefined;
}

const dist = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../packages/elements/dist');
const pages = new Map<string, { stamp: string; html: string }>();

/** Inline script text: `</script` inside it would end the element early. */
const inline = (code: string) => code.replace(/<\/script/gi, '<\\/script');

/** A UI resource's page, built from the current bundles (`npm run build:elements`); kept until they change. */
export function uiPage(ui: UiResource): string {
  const files = ['offerkit-elements.js', 'mcp-app-view.js'].map((f) => path.join(dist, f));
  let stamp: string;
  try {
    stamp = files.map((f) => `${fs.statSync(f).mtimeMs}:${fs.statSync(f).size}`).join('|');
  } catch {
    throw new Error('The components are not built: run npm run build:elements');
  }
  const known = pages.get(ui.uri);
  if (known?.stamp === stamp) return known.html;
  const [elements, view] = files.map((f) => fs.readFileSync(f, 'utf8'));
  const html =
    '<!doctype html><html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    `<title>offerkit ${ui.name}</title><style>body{margin:0;padding:8px;font-family:system-ui,sans-serif}` +
    '#note:empty{display:none}</style></head><body>' +
    `<${ui.element}></${ui.element}><p id="note" role="status"></p>` +
    `<script type="module">${inline(elements)}</script><script type="module">${inline(view)}</script>` +
    '</body></html>';
  pages.set(ui.uri, { stamp, html });
  return html;
}
