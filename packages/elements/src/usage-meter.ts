import { css, html, nothing, type PropertyValues } from 'lit';
import { OfferkitElement } from './base.js';
import type { AccountState, EffectiveAccess, Pack } from './client.js';
import { OfferkitPackSeller } from './packs.js';

/**
 * `<offerkit-usage-meter account="alice" publishable-key="pub_...">`: an account's effective access, each
 * usage entitlement as a bar against its limit, each credits pool as its balance (a bar against what its plan grants
 * a month) with the features that draw from it and what one unit of each costs, and a "Top up" button when the app
 * sells packs of it, and each on/off feature as included.
 */
export class OfferkitUsageMeter extends OfferkitPackSeller {
  static override properties = {
    ...OfferkitPackSeller.properties,
    account: {},
    access: { state: true },
    packs: { state: true },
    topUp: { state: true },
  };
  declare account: string;
  declare access: EffectiveAccess | null;
  /** The app's packs on sale, read once the account shows a pool that can be topped up. */
  declare packs: Pack[] | null;
  /** The pool whose packs are shown (after its "Top up"). */
  declare topUp: string;

  constructor() {
    super();
    this.account = '';
    this.access = null;
    this.packs = null;
    this.topUp = '';
  }

  override updated(changed: PropertyValues<this>) {
    const connection = ['account', 'publishableKey', 'accountToken', 'appId', 'baseUrl', 'client'] as const;
    // On load, the read the page's other components of this account share (one read for all of them).
    if (connection.some((k) => changed.has(k)) && (this.canPublishable || this.canToken))
      void this.read('load').then(() => this.resumePack());
  }

  /**
   * Reads the account's access again (call it after recording usage): through the page's shared state of the
   * account, so every component showing it (pricing table, paywall) gets the new state too.
   */
  async refresh() {
    await this.read('refresh');
  }

  private async read(how: 'load' | 'refresh') {
    try {
      const account = this.account || this.tokenAccount;
      if (!account) throw new Error('Set account (or an account-token)');
      // The token when it is this account's (it reads the subscription too), else the publishable key.
      const store = this.bindAccount(account)!;
      await (how === 'load' ? store.load() : store.refresh());
      this.error = '';
    } catch (e) {
      this.error = this.fail(e);
    }
  }

  protected override accountChanged(state: AccountState) {
    this.access = state.access;
    this.error = '';
    // Packs are sold for a pool kept per account with a limit (not per entity, not unlimited).
    if (!this.packs && state.access.credits?.some((p) => !p.unlimited && !p.per_entity)) {
      this.packs = [];
      this.listPacks().then(
        (packs) => (this.packs = packs),
        () => undefined, // no packs readable: no "Top up"
      );
    }
    this.emit('loaded', this.access);
  }

  override render() {
    const a = this.access;
    if (!a && !this.canPublishable && !this.canToken)
      return html`<div class="card" part="card">
        <p class="muted">
          Set <code>publishable-key</code> and <code>account</code>, or <code>account-token</code>, to start.
        </p>
      </div>`;
    if (!a)
      return html`<div class="card" part="card" aria-busy=${!this.error}>
        <p class="error" role="alert" part="error">${this.error || nothing}</p>
        ${
          this.error
            ? nothing
            : html`<p class="muted" role="status" part="loading">Loading usage…</p>
                <div class="bar ghost" aria-hidden="true"></div>
                <div class="bar ghost" aria-hidden="true"></div>`
        }
      </div>`;
    const usage = a.entitlements.filter((e) => e.type === 'usage');
    const features = a.entitlements.filter((e) => e.type === 'boolean');
    return html`<section class="card" part="card" aria-labelledby="plan">
      <h2 id="plan" part="title">${a.plan.name} plan</h2>
      <p role="status" class="done" part="status">${this.status || nothing}</p>
      ${this.renderPools(a)}
      <ul class="meters">
        ${usage.map((e) => {
          const pct = e.max === null ? 0 : e.max === 0 ? 100 : Math.min(100, (e.usage / e.max) * 100);
          const label =
            e.max === null
              ? `${this.number(e.usage)} used, unlimited`
              : `${this.number(e.usage)} of ${this.number(e.max)} used`;
          return this.meter(
            `m-${e.id}`,
            e.name,
            label,
            pct >= 100 ? 'full' : pct >= 80 ? 'warn' : 'ok',
            e.usage,
            e.max,
          );
        })}
      </ul>
      ${
        features.length
          ? html`<ul class="features" aria-label="Features">
              ${features.map(
                (f) =>
                  html`<li>
                    <span aria-hidden="true">${f.can ? '✓' : '✕'}</span> ${f.name}
                    <span class="visually-hidden">${f.can ? 'included' : 'not included'}</span>
                  </li>`,
              )}
            </ul>`
          : nothing
      }
      <p class="error" role="alert" part="error">${this.error || nothing}</p>
    </section>`;
  }

  /** After "Top up": the pool's pack buttons in its place, the first of them focused (the button clicked is gone). */
  private async showPacks(pool: string) {
    this.topUp = pool;
    await this.updateComplete;
    this.renderRoot.querySelector<HTMLElement>('[part=pack]')?.focus();
  }

  /**
   * One bar: `now` of `max` (null: unlimited, a striped bar without a value), its words, and `more` under it.
   * `level`: `warn` and `full` colour the words and the fill.
   */
  private meter(
    id: string,
    name: string,
    label: string,
    level: string,
    now: number,
    max: number | null,
    more: unknown = nothing,
  ) {
    if (max === null) level = 'ok';
    return html`<li part="meter">
      <div class="row">
        <span id=${id} class="name">${name}</span>
        <span class="count ${level}">${label}</span>
      </div>
      ${
        max === null
          ? html`<div class="bar unlimited" aria-hidden="true"></div>`
          : html`<div
              class="bar"
              role="meter"
              aria-labelledby=${id}
              aria-valuemin="0"
              aria-valuemax=${max}
              aria-valuenow=${Math.min(now, max)}
              aria-valuetext=${label}
            >
              <div class="fill ${level}" style="width:${max ? Math.min(100, (now / max) * 100) : 100}%"></div>
            </div>`
      }
      ${more}
    </li>`;
  }

  /**
   * Each pool: its balance against the plan's monthly grant (or against itself when more was granted; low under 10%
   * of the grant, as `credits.low` says; empty at 0), and the features drawing from it at their cost, marked when the
   * balance no longer covers a unit. Unlimited, or kept per entity (each has its own): a striped bar.
   */
  private renderPools(a: EffectiveAccess) {
    if (!a.credits?.length) return nothing;
    const account = this.account || this.tokenAccount;
    return html`<ul class="meters pools" aria-label="Credits">
      ${a.credits.map((p) => {
        const g = p.granted_per_period ?? 0;
        const packs = p.unlimited || p.per_entity ? [] : (this.packs ?? []).filter((k) => k.pool === p.id);
        const b = this.number(p.balance);
        const draws = a.entitlements
          .filter((e) => e.credits?.pool === p.id)
          .map(
            (e, i) =>
              html`${i ? ', ' : ''}<span class=${e.can ? '' : 'blocked'}
                  >${e.name}: ${this.number(e.credits!.cost)} a unit${e.can ? '' : ' (not enough)'}</span
                >`,
          );
        return this.meter(
          `p-${p.id}`,
          p.name,
          p.unlimited
            ? 'unlimited'
            : p.per_entity
              ? 'a balance each'
              : g
                ? `${b} left of ${this.number(g)} a month`
                : `${b} left`,
          p.balance <= 0 ? 'full' : p.balance * 10 < g ? 'warn' : 'ok',
          p.balance,
          p.unlimited || p.per_entity ? null : Math.max(g, p.balance),
          html`${draws.length ? html`<p class="draws">${draws}</p>` : nothing}${
            packs.length
              ? html`<div class="actions">
                  ${
                    this.topUp === p.id
                      ? this.packButtons(packs, p.name, account)
                      : html`<button
                          type="button"
                          class=${p.balance > 0 ? '' : 'primary'}
                          part="top-up"
                          aria-label="Top up ${p.name}"
                          @click=${() => this.showPacks(p.id)}
                        >
                          Top up
                        </button>`
                  }
                </div>`
              : nothing
          }`,
        );
      })}
    </ul>`;
  }

  static override styles = [
    OfferkitElement.baseStyles,
    css`
      :host {
        max-width: 32rem;
      }
      ul {
        list-style: none;
        margin: 0;
        padding: 0;
      }
      .meters li {
        margin: 0.85rem 0;
      }
      .row {
        display: flex;
        justify-content: space-between;
        gap: 1rem;
        flex-wrap: wrap;
        font-size: 0.95rem;
      }
      .name {
        font-weight: 600;
      }
      .count {
        color: var(--_muted);
      }
      .count.full {
        color: var(--_danger);
        font-weight: 600;
      }
      .bar {
        height: 10px;
        border-radius: 5px;
        background: var(--_surface);
        border: 1px solid var(--_border);
        overflow: hidden;
        margin-top: 0.35rem;
      }
      .bar.unlimited {
        background: repeating-linear-gradient(
          45deg,
          var(--_surface),
          var(--_surface) 6px,
          var(--_border) 6px,
          var(--_border) 12px
        );
      }
      .fill {
        height: 100%;
        background: var(--_accent);
      }
      .fill.warn {
        background: var(--offerkit-warning, #b54708);
      }
      .fill.full {
        background: var(--_danger);
      }
      .error:empty,
      .done:empty {
        display: none;
      }
      .done {
        color: var(--_success);
        font-weight: 600;
      }
      .card > .error:first-child {
        margin: 0;
      }
      .ghost {
        width: 100%;
        margin: 0.85rem 0;
        background: var(--_surface);
      }
      .pools {
        padding-bottom: 0.25rem;
        border-bottom: 1px solid var(--_border);
      }
      .draws {
        margin: 0.35rem 0 0;
        font-size: 0.85rem;
        color: var(--_muted);
      }
      .draws .blocked {
        color: var(--_danger);
      }
      .features {
        display: flex;
        flex-wrap: wrap;
        gap: 0.5rem 1.25rem;
        margin-top: 1rem;
        color: var(--_muted);
      }
    `,
  ];
}

if (!customElements.get('offerkit-usage-meter')) customElements.define('offerkit-usage-meter', OfferkitUsageMeter);

declare global {
  interface HTMLElementTagNameMap {
    'offerkit-usage-meter': OfferkitUsageMeter;
  }
}
