// The pricing table app (ui://offerkit/pricing-table): get_offer's or list_pricing_cards' plans; a plan chosen
// becomes the account's checkout link (create_upgrade_link, through the host) or a request in the conversation.
import '../src/pricing-table.js';
import { bridge, dataOf, say, start } from './shared.js';

/** list_pricing_cards' cards as the public offer view the pricing table shows (regular prices, no offer). */
function cardsView(data: Record<string, unknown>): unknown {
  type Card = { plan_id: string; title: string; monthlyPrice?: number; yearlyPrice?: number; currency?: string };
  if (!Array.isArray(data.data)) return null;
  const cards = (data.data as (Card & { isFree?: boolean })[]).filter((c) => typeof c?.plan_id === 'string');
  const price = (interval: 'month' | 'year', p: number) => ({ interval, price: p, list_price: p, cycles: null });
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

/** The tool's arguments: the account a checkout link is made for. */
let args: Record<string, unknown> = {};

start((data, a) => {
  args = a;
  const table = document.querySelector('offerkit-pricing-table')!;
  if (!table.show(data) && !table.show(cardsView(data))) say('No prices to show.');
});

/**
 * A plan chosen in the pricing table: with the account the tool was asked about, the page asks the server for its
 * checkout link (create_upgrade_link) and has the host open it; without one, it asks the conversation for it.
 */
document.addEventListener('offerkit-choose', (e) => {
  const { plan, interval, offer } = (e as CustomEvent<{ plan: string; interval: string; offer: string | null }>).detail;
  void (async () => {
    try {
      if (typeof args.namespaceId !== 'string') {
        await bridge.sendMessage(`I'd like the ${plan} plan, billed per ${interval}: please make my checkout link.`);
        say(`Asked for a checkout link for ${plan}.`);
        return;
      }
      say('Making your checkout link…');
      const made = await bridge.callServerTool({
        name: 'create_upgrade_link',
        arguments: { namespaceId: args.namespaceId, plan, interval, ...(offer ? { offer } : {}) },
      });
      const link = dataOf(made);
      if (made.isError || typeof link?.url !== 'string')
        throw new Error(made.content?.find((c) => c.type === 'text')?.text ?? 'No checkout link');
      await bridge.openLink(link.url);
      say(`Checkout for ${plan} opened.`);
    } catch (err) {
      say(err instanceof Error ? err.message : String(err));
    }
  })();
});
