// The balance and usage app (ui://offerkit/account-balance): an account's plan, its usage against its limits (the
// usage meter) and its credits pools' balances, with their live grants when the answer has them. It shows
// get_account_access (plan, usage, pools) and get_credit_balance (pools and grants), and completes either with the
// other through the host when the host proxies the server's tools.
import { html, nothing, render } from 'lit';
import '../src/usage-meter.js';
import type { EffectiveAccess } from '../src/client.js';
import { isAccess, readThroughHost, start } from './shared.js';

interface Grant {
  id: string;
  amount: number;
  remaining: number;
  expires_at: string | null;
  source: string;
}
/** A pool as get_credit_balance and effective access (`credits`) both describe it. */
interface Pool {
  id: string;
  name: string;
  balance: number;
  granted_per_period: number | null;
  unlimited: boolean;
  grants?: Grant[];
}
type Balances = { data: (Omit<Pool, 'id'> & { pool: string; grants: Grant[] })[] };

const isBalances = (data: unknown): data is Balances =>
  !!data && Array.isArray((data as Balances).data) && (data as Balances).data.every((p) => typeof p?.pool === 'string');

/** Where a grant came from, in words. */
const SOURCE: Record<string, string> = {
  plan: 'from the plan',
  api: 'granted',
  pack: 'bought',
  refund: 'refunded',
  rollover: 'rolled over',
};

const number = (n: number) => new Intl.NumberFormat(navigator.language).format(n);
const date = (iso: string) =>
  new Intl.DateTimeFormat(navigator.language, { dateStyle: 'medium' }).format(new Date(iso));

/** The pools, each with its balance, its plan's monthly grant, the features that draw from it and its grants. */
function showPools(pools: Pool[], access: EffectiveAccess | null) {
  const drawing = (pool: string) => (access?.entitlements ?? []).filter((e) => e.credits?.pool === pool);
  render(
    html`<h2>Credits</h2>
      ${
        pools.length === 0
          ? html`<p class="muted">No credits pools.</p>`
          : html`<ul class="pools">
              ${pools.map(
                (p) =>
                  html`<li>
                    <div class="row">
                      <span class="name">${p.name}</span>
                      <span class="balance">${p.unlimited ? 'Unlimited' : `${number(p.balance)} left`}</span>
                    </div>
                    ${
                      p.granted_per_period !== null
                        ? html`<p class="muted">${number(p.granted_per_period)} a month from the plan</p>`
                        : nothing
                    }
                    ${drawing(p.id).map(
                      (e) => html`<p class="muted">${e.name}: ${number(e.credits!.cost)} per use</p>`,
                    )}
                    ${
                      p.grants?.length
                        ? html`<ul class="grants" aria-label="${p.name} grants">
                            ${p.grants.map(
                              (g) =>
                                html`<li>
                                  ${number(g.remaining)} of ${number(g.amount)} left, ${SOURCE[g.source] ?? g.source},
                                  ${g.expires_at ? `expires ${date(g.expires_at)}` : 'never expires'}
                                </li>`,
                            )}
                          </ul>`
                        : nothing
                    }
                  </li>`,
              )}
            </ul>`
      }`,
    document.getElementById('credits')!,
  );
}

start(async (data, args) => {
  const meter = document.querySelector('offerkit-usage-meter')!;
  let access: EffectiveAccess | null = null;
  let balances: Balances | null = null;
  if (isAccess(data)) {
    access = data;
    meter.access = access;
    // The grants and their expiry are get_credit_balance's; the balances are already here.
    showPools(access.credits ?? [], access);
    const read = await readThroughHost('get_credit_balance', args);
    balances = isBalances(read) ? read : null;
  } else if (isBalances(data)) {
    balances = data;
    showPools(
      data.data.map((p) => ({ ...p, id: p.pool })),
      null,
    );
    const read = await readThroughHost('get_account_access', args);
    if (isAccess(read)) meter.access = access = read;
    else meter.hidden = true;
  }
  if (balances)
    showPools(
      balances.data.map((p) => ({ ...p, id: p.pool })),
      access,
    );
});
