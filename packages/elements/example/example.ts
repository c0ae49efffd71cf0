// The example page's glue: reads the connection from the query string and hands it to the components.
// The SDK comes from the components' bundle, the module the page already loaded (build.ts makes this import
// of ../src/index.js an import of ./offerkit-elements.js), not from a second copy.
import { PublishableClient, decodeAccountToken } from '../src/index.js';

const q = new URL(location.href).searchParams;
const get = (name: string) => q.get(name)?.trim() ?? '';
const [app, key, account, token] = [get('app'), get('key'), get('account'), get('account_token')];

const form = document.querySelector<HTMLFormElement>('#connect')!;
for (const input of form.querySelectorAll('input')) input.value = get(input.name);
if (!app || !key) {
  document.querySelector<HTMLElement>('#missing')!.hidden = false;
  document.querySelector<HTMLDetailsElement>('#connect-details')!.open = true;
}

const set = (el: Element | null, attrs: Record<string, string>) => {
  for (const [k, v] of Object.entries(attrs)) if (v) el?.setAttribute(k, v);
};
const pricing = document.querySelector('offerkit-pricing-table');
set(pricing, {
  'app-id': app,
  account,
  offer: get('offer') || 'launch',
  fallback: get('fallback'),
  ref: get('ref'),
  interval: get('interval'), // a 402's upgrade link names the interval (and the plan)
  'publishable-key': key,
  // With the account's own token the table knows its subscription: "Current plan", "Switch" and a pending change.
  'account-token': account && decodeAccountToken(token)?.accountId === account ? token : '',
});
const meter = document.querySelector('offerkit-usage-meter')!;
set(meter, { 'app-id': app, account, 'publishable-key': key });
set(document.querySelector('offerkit-paywall'), {
  'app-id': app,
  account,
  'publishable-key': key,
  'account-token': account && decodeAccountToken(token)?.accountId === account ? token : '',
});
set(document.querySelector('offerkit-cancel-flow'), { flow: get('flow'), 'account-token': token });

// No glue needed after a purchase or plan change: the components of one account share its state on the page.

// Say whose data each part shows: the meter, table and paywall the `account`, the cancel flow the token's.
const who = (id: string, text: string) => {
  const el = document.querySelector<HTMLElement>(id)!;
  el.textContent = text;
  el.hidden = !text;
};
who('#usage-who', account ? `Account ${account}, read with the publishable key.` : '');
const holder = decodeAccountToken(token)?.accountId;
who('#cancel-who', holder ? `Account ${holder}, from its account token.` : '');

const log = document.querySelector<HTMLElement>('#use-log')!;
document.querySelector('#use-one')!.addEventListener('click', async () => {
  const entitlement = get('entitlement') || 'api_calls';
  if (!app || !key || !account) {
    log.textContent = 'Set app id, publishable key and account first.';
    return;
  }
  try {
    const client = new PublishableClient({ baseUrl: location.origin, appId: app, publishableKey: key });
    const r = await client.usage.add(account, entitlement);
    log.textContent = `${r.entitlement}: ${r.count}`;
  } catch (e) {
    const paywall = document.querySelector('offerkit-paywall')!;
    log.textContent = paywall.show(e) ? '402: limit reached' : String((e as Error).message);
  }
  // No `meter.refresh()` needed: the bundle's client tells the components showing the account (meter, paywall,
  // pricing table) to read it again after the usage call.
});
