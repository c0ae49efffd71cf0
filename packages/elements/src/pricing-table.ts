import { html, nothing, type PropertyValues } from 'lit';
import { OfferkitElement } from './base.js';
import { CHECKOUT_REFUSALS, humanize, pendingChangeText, quoteText } from './format.js';
import { pricingTableStyles } from './pricing-table-styles.js';
import { isLive, type PlanQuote, type PublicOffer, type PublicPlan } from './client.js';

/**
 * `<offerkit-pricing-table offer="launch" fallback="regular_prices" publishable-key="pub_..." app-id="app_...">`:
 * the plans and prices of the public offer view, an interval switch, order bumps, and a checkout button that
 * goes to the provider's approval link and, when the buyer is back on this page, completes the checkout.
 * `table.show(view)` shows a view given rather than loaded (an MCP App page, which calls no API): a button then
 * only dispatches `offerkit-choose` `{ plan, interval, offer }` for the page to act on.
 */
export class OfferkitPricingTable extends OfferkitElement {
  static override properties = {
    ...OfferkitElement.properties,
    offer: {},
    fallback: {},
    ref: {},
    account: {},
    email: {},
    returnUrl: { attribute: 'return-url' },
    interval: { reflect: true },
    view: { state: true },
    bumps: { state: true },
    busy: { state: true },
    error: { state: true },
    status: { state: true },
    loading: { state: true },
    confirming: { state: true },
  };
  declare offer: string;
  declare fallback: string;
  declare ref: string;
  declare account: string;
  declare email: string;
  declare returnUrl: string;
  declare interval: 'month' | 'year';
  declare view: PublicOffer | null;
  declare bumps: string[];
  declare busy: string;
  declare error: string;
  declare status: string;
  /** While the offer is being read. */
  declare loading: boolean;
  /** A plan change shown with its quote, waiting for the buyer to confirm (nothing asked of the provider yet). */
  declare confirming: { plan: PublicPlan; quote: PlanQuote } | null;
  private loadFailed = false;
  private resumed = false;
  /** A view given with show(): nothing is loaded, and choosing a plan is the page's to act on. */
  private given = false;

  constructor() {
    super();
    this.offer = '';
    this.fallback = '';
    this.ref = '';
    this.account = '';
    this.email = '';
    this.returnUrl = '';
    this.interval = 'month';
    this.view = null;
    this.bumps = [];
    this.busy = '';
    this.error = '';
    this.status = '';
    this.loading = false;
    this.confirming = null;
  }

  override updated(changed: PropertyValues<this>) {
    const connection = [
      'offer',
      'fallback',
      'ref',
      'account',
      'accountToken',
      'publishableKey',
      'appId',
      'baseUrl',
      'client',
    ] as const;
    if (connection.some((k) => changed.has(k)) && this.canPublishable && this.offer) {
      void this.load();
      // The account's current plan (and, with its account token, its subscription), shared with the page's other
      // components.
      const store = this.bindAccount(this.buyer);
      if (store) void store.load().catch((e) => (this.error = this.fail(e)));
      if (!this.resumed) {
        this.resumed = true;
        void this.resume();
        void this.resumeChange();
      }
    }
  }

  /** The account buying: the `account` attribute, else the account token's. */
  private get buyer(): string {
    return this.account || this.tokenAccount;
  }

  /** Back from approving a plan change at the provider: say how it ended (the store shows the new state). */
  private async resumeChange() {
    if (!this.switchReturning) return;
    this.busy = 'complete';
    this.status = 'Confirming your plan change…';
    try {
      const outcome = await this.resumeSwitch();
      this.status =
        outcome === 'changed'
          ? 'Your plan has been changed.'
          : outcome === 'scheduled'
            ? 'Your plan change is scheduled.'
            : outcome === 'waiting'
              ? 'Your plan change is still being confirmed.'
              : '';
      if (outcome === 'not_changed') this.error = 'Your plan was not changed.';
    } catch (e) {
      this.status = '';
      this.error = this.fail(e, 'token');
    } finally {
      this.busy = '';
    }
  }

  /** First the quote (what is charged now and from when), shown for the buyer to confirm. */
  private async switchTo(plan: PublicPlan) {
    if (this.busy) return;
    this.busy = plan.plan.id;
    this.error = '';
    this.status = '';
    try {
      this.confirming = { plan, quote: await this.quotePlan(plan.plan.id, this.interval) };
    } catch (e) {
      this.confirming = null;
      this.error = this.changeError(e);
    } finally {
      this.busy = '';
    }
  }

  private changeError(e: unknown): string {
    const reason = (e as { body?: { reason?: string } }).body?.reason;
    const message = this.fail(e, 'token');
    void this.accountStore?.refresh().catch(() => undefined);
    return ((e as { status?: number }).status === 409 && reason && CHECKOUT_REFUSALS[reason]) || message;
  }

  /** Confirmed: the change is asked (with the quote's proration date) and the buyer goes to approve it. */
  private async confirmSwitch() {
    const c = this.confirming;
    if (!c || this.busy) return;
    this.busy = c.plan.plan.id;
    this.error = '';
    try {
      const change = await this.switchPlan(c.plan.plan.id, this.interval, this.returnUrl || undefined, c.quote);
      this.confirming = null;
      if (change && !change.approve_url)
        this.status = c.quote.cancels_at_renewal
          ? `Your subscription ends on ${this.day(change.cancel_at ?? change.renews_at ?? '')}; then you are on ${c.plan.plan.name}.`
          : 'Your plan change is scheduled.';
    } catch (e) {
      this.confirming = null;
      this.error = this.changeError(e);
    } finally {
      this.busy = '';
    }
  }

  /** The confirm step under a plan's card: the quote in words, Confirm and Cancel. */
  private renderConfirm(p: PublicPlan) {
    const c = this.confirming;
    if (!c || c.plan.plan.id !== p.plan.id) return nothing;
    const text = quoteText(c.quote, p.plan.name, { money: (a, cur) => this.money(a, cur), date: (d) => this.day(d) });
    return html`<div class="confirm" part="confirm" role="group" aria-label="Confirm the switch to ${p.plan.name}">
      <p part="confirm-summary">${text.summary}</p>
      <div class="actions">
        <button
          type="button"
          class="primary"
          part="confirm-button"
          ?disabled=${!!this.busy}
          @click=${() => this.confirmSwitch()}
        >
          ${this.busy === p.plan.id ? 'Redirecting…' : text.confirm}
        </button>
        <button type="button" part="confirm-cancel" ?disabled=${!!this.busy} @click=${() => (this.confirming = null)}>
          Cancel
        </button>
      </div>
    </div>`;
  }

  async load() {
    this.loading = true;
    try {
      this.view = await this.publishable().offers.getPublic(this.offer, {
        ...(this.fallback ? { fallback: this.fallback } : {}),
        ...(this.account ? { account: this.account } : {}),
        ...(this.ref ? { ref: this.ref } : {}),
      });
      const intervals = this.intervals();
      if (!intervals.includes(this.interval) && intervals.length) this.interval = intervals[0];
      // A bump chosen on an earlier view that this one no longer has is dropped, not sent.
      const offered = new Set(this.view.offer ? this.view.bumps.map((b) => b.id) : []);
      this.bumps = this.bumps.filter((id) => offered.has(id));
      if (this.error && this.loadFailed) this.error = '';
      this.loadFailed = false;
      this.emit('loaded', this.view);
    } catch (e) {
      this.error = this.fail(e, 'publishable');
      this.loadFailed = true;
    } finally {
      this.loading = false;
    }
  }

  private intervals(): ('month' | 'year')[] {
    const all = new Set(this.view?.plans.flatMap((p) => p.prices.map((x) => x.interval)) ?? []);
    return (['month', 'year'] as const).filter((i) => all.has(i));
  }

  /** On return from the provider with a checkout this table started: complete it (the subscription's approval
   * first when the bump order came before it). */
  private async resume() {
    const p = this.takeReturnedCheckout();
    if (!p) return;
    if (p.interval) this.interval = p.interval;
    this.busy = 'complete';
    this.status = 'Completing your purchase…';
    try {
      const c = await this.completeCheckout(p.id);
      if (c.status === 'completed') {
        this.status = 'Thank you! Your purchase is complete.';
        void this.load(); // e.g. bumps for add-ons the account now owns are no longer offered
      } else {
        this.status = '';
        this.error = c.status === 'created' ? 'The payment is still being confirmed.' : `Checkout ${c.status}.`;
      }
    } catch (e) {
      this.status = '';
      this.error = this.fail(e, 'publishable');
    } finally {
      this.busy = '';
    }
  }

  /** Shows a public offer view given by the page (no connection needed); false when it is not one. */
  show(view: unknown): boolean {
    const v = view as PublicOffer | null;
    if (!v || !Array.isArray(v.plans) || !Array.isArray(v.bumps)) return false;
    this.given = true;
    this.view = v;
    const intervals = this.intervals();
    if (!intervals.includes(this.interval) && intervals.length) this.interval = intervals[0];
    this.emit('loaded', v);
    return true;
  }

  private async choose(plan: PublicPlan) {
    if (this.given && !this.canPublishable) {
      this.emit('choose', { plan: plan.plan.id, interval: this.interval, offer: this.view?.offer?.id ?? null });
      return;
    }
    if (this.busy) return; // one checkout at a time, even for a click that beats the re-render
    this.busy = plan.plan.id;
    this.error = '';
    try {
      // The return address is marked as this checkout's trip, so only its return is taken on the way back.
      const { url, ...trip } = this.newTrip(this.returnUrl);
      const body = {
        interval: this.interval,
        ...(this.buyer ? { account: this.buyer } : this.email ? { email: this.email } : {}),
        ...(this.ref ? { ref: this.ref } : {}),
        return_url: url,
        cancel_url: url,
      };
      const v = this.view!;
      const c = v.offer
        ? await this.publishable().offers.checkout(v.offer.id, {
            ...body,
            plan: plan.plan.id,
            interval: this.interval,
            ...(this.bumps.length ? { bumps: [...new Set(this.bumps)] } : {}),
          })
        : await this.publishable().plans.checkout(plan.plan.id, body);
      // (A plan change answers only `if_subscribed: "change"`, which this table does not send: it switches plans with
      // the account token.)
      if (c.object === 'plan_change') return;
      this.goToCheckout(c, this.interval, trip);
    } catch (e) {
      // 409 with a reason: the offer changed since this view was loaded (a bump or price gone, archived,
      // expired). Say so in the buyer's words and show the current one, so the next click buys what they see.
      const reason = (e as { status?: number; body?: { reason?: string } }).body?.reason;
      const message = this.fail(e, 'publishable');
      this.error = ((e as { status?: number }).status === 409 && reason && CHECKOUT_REFUSALS[reason]) || message;
      if ((e as { status?: number }).status === 409 && reason) await this.load();
    } finally {
      this.busy = '';
    }
  }

  override render() {
    if (!this.given && (!this.offer || !this.canPublishable))
      return html`<p class="muted" part="table">
        Set <code>offer</code>, <code>app-id</code> and <code>publishable-key</code> to show prices.
      </p>`;
    const v = this.view;
    const intervals = this.intervals();
    return html`<section part="table" aria-label=${v?.offer?.name ?? 'Pricing'} aria-busy=${this.loading && !v}>
      ${
        v?.offer
          ? html`<header>
              <h2 part="title">${v.offer.name}</h2>
              ${v.offer.description ? html`<p class="muted">${v.offer.description}</p>` : nothing}
            </header>`
          : nothing
      }
      ${
        intervals.length > 1
          ? html`<div class="intervals" role="radiogroup" aria-label="Billing interval">
              ${intervals.map(
                (i) =>
                  html`<label class="interval">
                    <input
                      type="radio"
                      name="interval"
                      .checked=${this.interval === i}
                      @change=${() => (this.interval = i)}
                    />
                    <span>${i === 'month' ? 'Monthly' : 'Yearly'}</span>
                  </label>`,
              )}
            </div>`
          : nothing
      }
      <p class="status" role="status">${this.status || nothing}</p>
      ${this.renderPendingChange()}
      <p class="error" role="alert" part="error">${this.error || nothing}</p>
      ${
        !v && !this.error
          ? html`<p class="loading" role="status" part="loading">Loading prices…</p>
              <div class="plans" aria-hidden="true">
                <div class="plan card ghost"></div>
                <div class="plan card ghost"></div>
              </div>`
          : nothing
      }
      <div class="plans">${v?.plans.map((p) => this.renderPlan(p)) ?? nothing}</div>
      ${
        v?.offer && v.bumps.length
          ? html`<fieldset class="bumps" part="bumps">
              <legend>Add to your order</legend>
              ${v.bumps.map(
                (b) =>
                  html`<label class="bump">
                    <input
                      type="checkbox"
                      .checked=${this.bumps.includes(b.id)}
                      @change=${(e: Event) =>
                        (this.bumps = [
                          ...this.bumps.filter((x) => x !== b.id),
                          ...((e.target as HTMLInputElement).checked ? [b.id] : []),
                        ])}
                    />
                    <span>${b.name}</span> <strong>${this.money(b.price, b.currency)}</strong>
                  </label>`,
              )}
            </fieldset>`
          : nothing
      }
    </section>`;
  }

  private renderPlan(p: PublicPlan) {
    const offered = p.prices.find((x) => x.interval === this.interval);
    // A subscribed account changes plan at the plan's regular price (a change is not a new purchase through the
    // offer), and its current plan costs what its subscription does: show what the buyer would pay.
    const sub = this.canSwitch() ? this.accountState!.subscription! : null;
    const price =
      offered && sub
        ? this.isCurrent(p.plan.id)
          ? { ...offered, price: sub.price, list_price: sub.price, cycles: null }
          : { ...offered, price: offered.list_price, cycles: null }
        : offered;
    const extras = new Map(p.extras.entitlements.map((e) => [e.id, e.max]));
    const current = this.isCurrent(p.plan.id);
    return html`<article class="plan card ${current ? 'current' : ''}" part="plan" aria-labelledby="plan-${p.plan.id}">
      <h3 id="plan-${p.plan.id}">
        ${p.plan.name} ${current ? html`<span class="badge" part="current-badge">Current plan</span>` : nothing}
      </h3>
      ${p.plan.description ? html`<p class="muted">${p.plan.description}</p>` : nothing}
      ${
        price
          ? html`<p class="price">
                <strong>${this.money(price.price, price.currency)}</strong><span class="muted">/${price.interval}</span>
                ${
                  price.list_price > price.price
                    ? html`<s class="muted" aria-label="regular price"
                        >${this.money(price.list_price, price.currency)}</s
                      >`
                    : nothing
                }
              </p>
              ${
                price.cycles
                  ? html`<p class="muted small">for ${price.cycles} ${price.interval}s, then the regular price</p>`
                  : nothing
              }`
          : html`<p class="muted">Not available ${this.interval === 'year' ? 'yearly' : 'monthly'}</p>`
      }
      <ul>
        ${p.entitlements
          // A usage limit of 0 is not included; say nothing rather than "0 exports".
          .filter((e) => e.type === 'boolean' || e.max !== 0)
          .map(
            (e) =>
              html`<li>
                ${e.type === 'boolean' ? e.name : e.max === null ? `Unlimited ${e.name}` : `${this.number(e.max)} ${e.name}`}
                ${extras.has(e.id) ? html`<span class="extra">bonus</span>` : nothing}
              </li>`,
          )}
        ${p.extras.addons.map((a) => html`<li>${humanize(a)} <span class="extra">bonus</span></li>`)}
      </ul>
      ${
        current
          ? html`<button type="button" part="cta" disabled>Current plan</button>`
          : price?.price === 0 && !this.canSwitch()
            ? html`<p class="muted">No payment needed</p>`
            : this.renderCta(p, !price)
      }
      ${this.renderConfirm(p)}
    </article>`;
  }

  /**
   * Whether a card is the account's current plan at the interval shown: its live subscription's plan and interval
   * (read with an account token), else the plan its access names (a free plan, or one set without payment).
   */
  private isCurrent(plan: string): boolean {
    const st = this.accountState;
    if (!st) return false;
    if (isLive(st.subscription)) return st.subscription.plan === plan && st.subscription.interval === this.interval;
    return st.access.plan.id === plan;
  }

  /** "Changes to Basic on December 26, 2026", or a change still awaiting the buyer's approval. */
  private renderPendingChange() {
    const name = (id: string) => this.view?.plans.find((p) => p.plan.id === id)?.plan.name ?? humanize(id);
    const text = pendingChangeText(this.accountState, name, this.locales);
    return text ? html`<p class="pending" part="pending-change">${text}</p>` : nothing;
  }

  private renderCta(p: PublicPlan, unavailable: boolean) {
    if (this.canSwitch()) {
      const sub = this.accountState!.subscription!;
      const label =
        sub.plan === p.plan.id
          ? `Switch to ${this.interval === 'year' ? 'yearly' : 'monthly'}`
          : `Switch to ${p.plan.name}`;
      return html`<button
        type="button"
        class="primary"
        part="cta"
        ?disabled=${unavailable || !!this.busy || !!sub.pending_change || !!sub.cancel_at || !!this.confirming}
        @click=${() => this.switchTo(p)}
      >
        ${this.busy === p.plan.id && !this.confirming ? 'Checking the price…' : label}
      </button>`;
    }
    return html`<button
      type="button"
      class="primary"
      part="cta"
      ?disabled=${unavailable || !!this.busy}
      @click=${() => this.choose(p)}
    >
      ${this.busy === p.plan.id ? 'Redirecting…' : `Choose ${p.plan.name}`}
    </button>`;
  }

  static override styles = pricingTableStyles;
}

if (!customElements.get('offerkit-pricing-table'))
  customElements.define('offerkit-pricing-table', OfferkitPricingTable);

declare global {
  interface HTMLElementTagNameMap {
    'offerkit-pricing-table': OfferkitPricingTable;
  }
}
