import { css, html, nothing, type PropertyValues } from 'lit';
import { OfferkitElement } from './base.js';
import type { AccountState, EffectiveAccess } from './client.js';

/**
 * `<offerkit-usage-meter account="alice" publishable-key="pub_...">`: an account's effective access, each
 * usage entitlement as a bar against its limit, each credits pool as its balance (a bar against what its plan grants
 * a month) with the features that draw from it and what one unit of each costs, and each on/off feature as included.
 */
export class OfferkitUsageMeter extends OfferkitElement {
  static override properties = {
    ...OfferkitElement.properties,
    account: {},
    access: { state: true },
    error: { state: true },
  };
  declare account: string;
  declare access: EffectiveAccess | null;
  declare error: string;

  constructor() {
    super();
    this.account = '';
    this.access = null;
    this.error = '';
  }

  override updated(changed: PropertyValues<this>) {
    const connection = ['account', 'publishableKey', 'accountToken', 'appId', 'baseUrl', 'client'] as const;
    // On load, the read the page's other components of this account share (one read for all of them).
    if (connection.some((k) => changed.has(k)) && (this.canPublishable || this.canToken)) void this.read('load');
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
      ${this.renderPools(a)}
      <ul class="meters">
        ${usage.map((e) => {
          const pct = e.max === null ? 0 : e.max === 0 ? 100 : Math.min(100, (e.usage / e.max) * 100);
          const level = e.max === null ? 'ok' : pct >= 100 ? 'full' : pct >= 80 ? 'warn' : 'ok';
          const label =
            e.max === null
              ? `${this.number(e.usage)} used, unlimited`
              : `${this.number(e.usage)} of ${this.number(e.max)} used`;
          return html`<li part="meter">
            <div class="row">
              <span id="m-${e.id}" class="name">${e.name}</span>
              <span class="count ${level}">${label}</span>
            </div>
            ${
              e.max === null
                ? html`<div class="bar unlimited" aria-hidden="true"></div>`
                : html`<div
                    class="bar"
                    role="meter"
                    aria-labelledby="m-${e.id}"
                    aria-valuemin="0"
                    aria-valuemax=${e.max}
                    aria-valuenow=${Math.min(e.usage, e.max)}
                    aria-valuetext=${label}
                  >
                    <div class="fill ${level}" style="width:${pct}%"></div>
                  </div>`
            }
          </li>`;
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

  /**
   * Each pool: its balance (per entity: each entity has its own, so none is shown here), a bar against the plan's
   * monthly grant (low under 10% of it, as `credits.low` says; empty at 0), and the features drawing from it.
   */
  private renderPools(a: EffectiveAccess) {
    const pools = a.credits ?? [];
    if (!pools.length) return nothing;
    return html`<ul class="meters pools" aria-label="Credits">
      ${pools.map((p) => {
        const drawing = a.entitlements.filter((e) => e.credits?.pool === p.id);
        const granted = p.granted_per_period;
        const level =
          p.unlimited || p.per_entity
            ? 'ok'
            : p.balance <= 0
              ? 'full'
              : granted && p.balance * 10 < granted
                ? 'warn'
                : 'ok';
        const label = p.unlimited
          ? 'unlimited'
          : p.per_entity
            ? 'a balance per member'
            : granted
              ? `${this.number(p.balance)} left of ${this.number(granted)} a month`
              : `${this.number(p.balance)} left`;
        const max = Math.max(granted ?? 0, p.balance);
        return html`<li part="pool" data-pool=${p.id}>
          <div class="row">
            <span id="p-${p.id}" class="name">${p.name}</span>
            <span class="count ${level}">${label}</span>
          </div>
          ${
            p.unlimited || p.per_entity
              ? html`<div class="bar unlimited" aria-hidden="true"></div>`
              : html`<div
                  class="bar"
                  role="meter"
                  aria-labelledby="p-${p.id}"
                  aria-valuemin="0"
                  aria-valuemax=${max}
                  aria-valuenow=${p.balance}
                  aria-valuetext=${label}
                >
                  <div class="fill ${level}" style="width:${max ? (p.balance / max) * 100 : 0}%"></div>
                </div>`
          }
          ${
            drawing.length
              ? html`<p class="draws" part="draws">
                  ${drawing.map(
                    (e, i) =>
                      html`${i ? ', ' : ''}<span class=${e.can ? '' : 'blocked'}
                          >${e.name}: ${this.number(e.credits!.cost)} a unit${e.can ? '' : ' (not enough)'}</span
                        >`,
                  )}
                </p>`
              : nothing
          }
        </li>`;
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
      .error:empty {
        display: none;
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
