// The view of an MCP App UI resource (src/mcp/apps.ts): a page holding one component, which it fills from the
// tool result the host passes (MCP Apps, `@modelcontextprotocol/ext-apps`), never from the network.
import { App } from '@modelcontextprotocol/ext-apps/app-with-deps';
import type { OfferkitPaywall } from '../src/paywall.js';
import type { OfferkitPricingTable } from '../src/pricing-table.js';
import type { OfferkitUsageMeter } from '../src/usage-meter.js';

type Result = { structuredContent?: Record<string, unknown>; content?: { type: string; text?: string }[] };

/** The tool's JSON: its structured content, else its text parsed (a host may pass either). */
function dataOf(result: Result): Record<string, unknown> | null {
  if (result.structuredContent) return result.structuredContent;
  const text = result.content?.find((c) => c.type === 'text')?.text;
  try {
    return text ? (JSON.parse(text) as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** list_pricing_cards' cards as the public offer view the pricing table shows (regular prices, no offer). */
function cardsView(data: Record<string, unknown>): unknown {
  type Card = { plan_id: string; title: string; monthlyPrice?: number; yearlyPrice?: number; currency?: string };
  if (!Array.isArray(data.data)) return null;
  const cards = (data.data as (Card & { isFree?: boolean })[]).filter((c) => typeof c?.plan_id === 'string');
  const price = (interval: 'month' | 'year', p: number) => ({
    interval,
    price: p,
    list_price: p,
    cycles: null,
  });
  return {
    source: 'regular',
    offer: null,
    ref: null,
    bumps: [],
    plans: cards.map((c) => ({
      plan: { id: c.plan_id, name: c.title, description: null },
      prices: [
        ...(c.monthlyPrice !== undefined ? [price('month', c.monthlyPrice)] : c.isFree ? [price('month', 0)] : []),
        ...(c.yearlyPrice !== undefined ? [price('year', c.yearlyPrice)] : []),
      ].map((p) => ({ ...p, currency: c.currency ?? 'USD' })),
      extras: { entitlements: [], addons: [], cycles: null },
      entitlements: [],
    })),
  };
}

/** The tool's arguments (the host sends them before the result): the account a checkout link is made for. */
let args: Record<string, unknown> = {};

function show(result: Result) {
  const data = dataOf(result);
  const note = document.getElementById('note')!;
  note.textContent = '';
  if (!data) return;
  // A refusal other than a 402 (whose body the paywall shows) is said as it is: every tool result is structured.
  if (typeof data.error === 'string' && data.error !== 'limit_reached') {
    note.textContent = data.error;
    return;
  }
  const meter = document.querySelector<OfferkitUsageMeter>('offerkit-usage-meter');
  if (meter && Array.isArray(data.entitlements)) meter.access = data as unknown as OfferkitUsageMeter['access'];
  const table = document.querySelector<OfferkitPricingTable>('offerkit-pricing-table');
  if (table && !table.show(data) && !table.show(cardsView(data))) note.textContent = 'No prices to show.';
  const paywall = document.querySelector<OfferkitPaywall>('offerkit-paywall');
  if (paywall) {
    // A 402 shows the paywall; a usage call that went through says what the counter is now.
    if (!paywall.show(data) && typeof data.count === 'number')
      note.textContent = `${String(data.entitlement)}: ${data.count} used`;
  }
}

const app = new App({ name: 'offerkit', version: '1.0.0' });
app.ontoolinput = (input) => (args = input.arguments ?? {});
app.ontoolresult = (result) => show(result as Result);

/**
 * A plan chosen in the pricing table: with the account the tool was asked about, the page asks the server for its
 * checkout link (create_upgrade_link) and has the host open it; without one, it asks the conversation for it.
 */
document.addEventListener('offerkit-choose', (e) => {
  const { plan, interval, offer } = (e as CustomEvent<{ plan: string; interval: string; offer: string | null }>).detail;
  const note = document.getElementById('note')!;
  void (async () => {
    try {
      if (typeof args.namespaceId !== 'string') {
        await app.sendMessage({
          role: 'user',
          content: [
            { type: 'text', text: `I'd like the ${plan} plan, billed per ${interval}: please make my checkout link.` },
          ],
        });
        note.textContent = `Asked for a checkout link for ${plan}.`;
        return;
      }
      note.textContent = 'Making your checkout link…';
      const made = (await app.callServerTool({
        name: 'create_upgrade_link',
        arguments: { namespaceId: args.namespaceId, plan, interval, ...(offer ? { offer } : {}) },
      })) as Result & { isError?: boolean };
      const link = dataOf(made);
      if (made.isError || typeof link?.url !== 'string')
        throw new Error(made.content?.find((c) => c.type === 'text')?.text ?? 'No checkout link');
      await app.openLink({ url: link.url });
      note.textContent = `Checkout for ${plan} opened.`;
    } catch (err) {
      note.textContent = err instanceof Error ? err.message : String(err);
    }
  })();
});
void app.connect();
