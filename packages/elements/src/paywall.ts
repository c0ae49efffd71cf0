import { css, html, nothing, type PropertyValues } from 'lit';
import { OfferkitElement } from './base.js';
import { humanize, pendingChangeText, quoteText } from './format.js';
import { limitReachedBody, type AccountState, type PaywallBody, type PlanQuote } from './client.js';
import { OfferkitPackSeller } from './packs.js';

/**
 * `<offerkit-paywall>`: given the 402 of a usage call (`paywall.show(error)` with the SDK's LimitReachedError,
 * or `paywall.body = error.body`), shows the limit reached, the upgrade offer and its checkout link; for a credits
 * pool run dry (`credits_exhausted`) also a button for each pack on sale, above the upgrade. With the
 * `account` (or an `account-token`) it knows the account's plan: a subscribed account switches plan (with its
 * account token) instead of buying a second subscription, and once the limit no longer blocks (bought, changed,
 * on any component of the page) it closes itself (`offerkit-resolved`).
 */
export class OfferkitPaywall extends OfferkitPackSeller {
  static override properties = {
    ...OfferkitPackSeller.properties,
    account: {},
    body: { attribute: false },
    quote: { state: true },
  };
  declare account: string;
  declare body: PaywallBody | null;
  /** The upgrade's quote, shown for the buyer to confirm before anything is asked of the provider. */
  declare quote: PlanQuote | null;
  private resumed = false;

  constructor() {
    super();
    this.account = '';
    this.body = null;
    this.quote = null;
  }

  override updated(changed: PropertyValues<this>) {
    const connection = ['account', 'publishableKey', 'accountToken', 'appId', 'baseUrl', 'client'] as const;
    if (!connection.some((k) => changed.has(k)) || !(this.canPublishable || this.canToken)) return;
    const store = this.bindAccount(this.account || this.tokenAccount);
    if (store) void this.resumePack();
    if (store && !this.resumed && this.canPublishable) {
      const bought = this.takeReturnedCheckout();
      if (bought) {
        this.resumed = true;
        void this.resumeCheckout(bought.id);
      }
    }
    if (store && !this.resumed && this.switchReturning) {
      this.resumed = true;
      void this.resumeSwitch().then((outcome) => {
        const plan = this.accountState?.access.plan.name;
        if (outcome === 'changed') this.status = plan ? `Your plan is now ${plan}.` : 'Your plan has been changed.';
        else if (outcome === 'scheduled') this.status = 'Your plan change is scheduled.';
        else if (outcome === 'not_changed') this.status = 'Your plan was not changed.';
      });
    }
  }

  /** A purchase or plan change anywhere on the page: the limit shown may not block any more. */
  protected override accountChanged(state: AccountState) {
    const b = this.body;
    if (!b) return;
    const e = state.access.entitlements.find((x) => x.id === b.entitlement.id);
    const p = b.error === 'credits_exhausted' && state.access.credits?.find((x) => x.id === b.pool.id);
    // A pool's shortfall is over once its balance covers the draw (an entity's balance is not in the account's view).
    const blocked =
      b.error === 'credits_exhausted'
        ? !!b.entity || !p || (!p.unlimited && p.balance < b.need)
        : !e || (e.max !== null && e.usage >= e.max);
    if (!blocked) {
      this.body = null;
      this.emit('resolved', state);
    }
  }

  /** Back on the page from approving the upgrade bought here: complete it; every component shows the new plan. */
  private async resumeCheckout(id: string) {
    this.busy = true;
    this.status = 'Completing your purchase…';
    try {
      const c = await this.completeCheckout(id);
      const plan = this.accountState?.access.plan.name;
      if (c.status === 'completed')
        this.status = `Thank you! Your purchase is complete.${plan ? ` Your plan is now ${plan}.` : ''}`;
      else {
        this.status = '';
        this.error = c.status === 'created' ? 'The payment is still being confirmed.' : `Checkout ${c.status}.`;
      }
    } catch (e) {
      this.status = '';
      this.error = this.fail(e, 'publishable');
    } finally {
      this.busy = false;
    }
  }

  /**
   * Whether the upgrade is bought here (a checkout made by this element, returning to this page) rather than
   * through the 402's link: when the element has the publishable key and the account, and the link is the one
   * the service made for the 402 (`/apps/:app/checkouts/:id/open`, which returns to the service's own page). A link
   * to the app's own pricing page (the app's `checkout_url`) is followed as it is.
   */
  private get buysHere(): boolean {
    const o = this.body?.offer;
    if (!o?.checkout_url || !this.canPublishable || !(this.account || this.tokenAccount)) return false;
    try {
      return /\/apps\/[^/]+\/checkouts\/[^/]+\/open$/.test(new URL(o.checkout_url).pathname);
    } catch {
      return false;
    }
  }

  private async buy() {
    const o = this.body?.offer;
    if (!o || this.busy) return;
    this.busy = true;
    this.error = '';
    try {
      // The return address is marked as this checkout's trip, so only its return is taken on the way back.
      const { url, ...trip } = this.newTrip(this.returnUrl);
      const account = this.account || this.tokenAccount;
      const body = { interval: o.interval, account, return_url: url, cancel_url: url };
      const c = o.id
        ? await this.publishable().offers.checkout(o.id, { ...body, plan: o.plan.id, currency: o.currency })
        : await this.publishable().plans.checkout(o.plan.id, body);
      if (c.object === 'checkout') this.goToCheckout(c, o.interval, trip);
    } catch (e) {
      this.error = this.fail(e, 'publishable');
      void this.accountStore?.refresh().catch(() => undefined);
    } finally {
      this.busy = false;
    }
  }

  /** A subscribed buyer's upgrade: first the quote, then (confirmed) the change and the trip to approve it. */
  private async switchTo() {
    const o = this.body?.offer;
    if (!o || this.busy) return;
    this.busy = true;
    this.error = '';
    try {
      if (!this.quote) this.quote = await this.quotePlan(o.plan.id, o.interval);
      else {
        await this.switchPlan(o.plan.id, o.interval, this.returnUrl || undefined, this.quote);
        this.quote = null;
      }
    } catch (e) {
      this.quote = null;
      this.error = this.fail(e, 'token');
    } finally {
      this.busy = false;
    }
  }

  /**
   * Shows a 402: pass what the SDK threw (a LimitReachedError) or its `body`. Returns false, showing nothing, for
   * anything else, so `catch (e) { if (!paywall.show(e)) throw e; }` passes other errors on.
   */
  show(errorOrBody: unknown): boolean {
    const body = limitReachedBody(errorOrBody);
    if (!body) return false;
    this.body = body;
    this.status = '';
    this.error = '';
    this.quote = null;
    // The usage that hit the limit changed the account: every component showing it reads it again.
    void this.accountStore?.refresh().catch(() => undefined);
    this.emit('shown', this.body);
    void this.updateComplete.then(() => this.renderRoot.querySelector<HTMLElement>('h2')?.focus());
    return true;
  }

  private dismiss() {
    this.body = null;
    this.quote = null;
    this.emit('dismissed', null);
  }

  override render() {
    const b = this.body;
    if (!b)
      return this.status
        ? html`<section class="card" part="card" aria-busy=${this.busy}>
            <p role="status" class=${this.busy ? 'muted' : 'done'} part="status">${this.status}</p>
            ${
              this.busy
                ? nothing
                : html`<div class="actions">
                    <button type="button" @click=${() => (this.status = '')}>Close</button>
                  </div>`
            }
          </section>`
        : this.error
          ? html`<section class="card" part="card">
              <p class="error" role="alert" part="error">${this.error}</p>
              <div class="actions"><button type="button" @click=${() => (this.error = '')}>Close</button></div>
            </section>`
          : nothing;
    const st = this.accountState;
    const current = st?.access.plan.name ?? null;
    const pending = pendingChangeText(
      st,
      (id) => (id === b.offer?.plan.id ? b.offer.plan.name : humanize(id)),
      this.locales,
    );
    const o = b.offer;
    const e = b.entitlement;
    const account = this.account || this.tokenAccount;
    // A credits pool run dry: its packs on sale (cheapest first, as the 402 lists them), when the element can buy.
    const dry = b.error === 'credits_exhausted' ? b : null;
    const used = b.error === 'limit_reached' ? b.entitlement : null;
    const packs = dry && account && (this.canPublishable || this.canToken) ? dry.packs : [];
    const what = dry ? dry.pool.name : e.name;
    return html`<section class="card" part="card" role="region" aria-labelledby="title">
      <h2 id="title" tabindex="-1" part="title">
        ${dry ? `You are out of ${what}` : `You have reached your ${what} limit`}
      </h2>
      ${
        dry
          ? html`<p>
              ${e.name} costs ${this.number(dry.entitlement.cost)} ${what} a unit: you have
              <strong>${this.number(dry.pool.balance)}</strong>, ${this.number(dry.need)} needed.
            </p>`
          : used &&
            html`<p>
              You have used <strong>${this.number(used.usage)}</strong>${
                used.max === null ? nothing : html` of <strong>${this.number(used.max)}</strong>`
              }
              ${what}.
            </p>`
      }
      ${current ? html`<p class="muted" part="current-plan">Current plan: ${current}</p>` : nothing}
      ${pending ? html`<p class="pending" part="pending-change">${pending}</p>` : nothing}
      ${
        packs.length
          ? html`<div class="offer" part="packs">
              <h3>Top up</h3>
              <div class="actions">${this.packButtons(packs, what, account)}</div>
            </div>`
          : nothing
      }
      ${
        o
          ? html`<div class="offer" part="offer">
              <h3>${o.plan.name}${o.name && o.name !== o.plan.name ? html` · ${o.name}` : nothing}</h3>
              <p class="price">
                <strong>${this.money(o.price, o.currency)}</strong> per ${o.interval}
                ${o.list_price > o.price ? html`<s class="muted">${this.money(o.list_price, o.currency)}</s>` : nothing}
                ${o.cycles ? html`<span class="muted">for ${this.number(o.cycles)} ${o.interval}s</span>` : nothing}
              </p>
              <p>${o.new_limit === null ? `Unlimited ${what}` : `${this.number(o.new_limit)} ${what}`}</p>
              <div class="actions">
                ${
                  this.canSwitch()
                    ? html`${
                          this.quote
                            ? html`<p part="confirm-summary">
                                ${
                                  quoteText(this.quote, o.plan.name, {
                                    money: (a, c) => this.money(a, c),
                                    date: (d) => this.day(d),
                                  }).summary
                                }
                              </p>`
                            : nothing
                        }<button
                          type="button"
                          class="primary"
                          part=${this.quote ? 'confirm-button' : 'cta'}
                          ?disabled=${this.busy || !!st?.subscription?.pending_change}
                          @click=${this.switchTo}
                        >
                          ${
                            this.busy
                              ? this.quote
                                ? 'Redirecting…'
                                : 'Checking the price…'
                              : this.quote
                                ? quoteText(this.quote, o.plan.name, {
                                    money: (a, c) => this.money(a, c),
                                    date: (d) => this.day(d),
                                  }).confirm
                                : `Switch to ${o.plan.name}`
                          }
                        </button>`
                    : this.buysHere
                      ? html`<button type="button" class="primary" part="cta" ?disabled=${this.busy} @click=${this.buy}>
                          ${this.busy ? 'Redirecting…' : `Upgrade to ${o.plan.name}`}
                        </button>`
                      : o.checkout_url
                        ? html`<a class="button primary" part="cta" href=${o.checkout_url}
                            >Upgrade to ${o.plan.name}</a
                          >`
                        : html`<p class="muted">Upgrades are not available right now.</p>`
                }
                <button type="button" @click=${this.dismiss}>Not now</button>
              </div>
              <p class="error" role="alert">${this.error || nothing}</p>
            </div>`
          : html`${packs.length ? nothing : html`<p class="muted">${b.message}</p>`}
              <div class="actions">
                <button type="button" @click=${this.dismiss}>${packs.length ? 'Not now' : 'Close'}</button>
              </div>
              <p class="error" role="alert">${this.error || nothing}</p>`
      }
    </section>`;
  }

  static override styles = [
    OfferkitElement.baseStyles,
    css`
      :host {
        max-width: 32rem;
      }
      .card {
        border-color: var(--_accent);
      }
      .offer {
        background: var(--_surface);
        border-radius: var(--_radius);
        padding: 1rem;
      }
      .offer + .offer {
        margin-top: 0.75rem;
      }
      .price s {
        margin-left: 0.35rem;
      }
      h2:focus {
        outline: none;
      }
      .pending {
        border-left: 3px solid var(--_accent);
        padding-left: 0.6rem;
      }
      .done {
        color: var(--_success);
        font-weight: 600;
        margin: 0;
      }
      .error:empty {
        display: none;
      }
    `,
  ];
}

if (!customElements.get('offerkit-paywall')) customElements.define('offerkit-paywall', OfferkitPaywall);

declare global {
  interface HTMLElementTagNameMap {
    'offerkit-paywall': OfferkitPaywall;
  }
}
