import { css, html, nothing } from 'lit';
import { OfferkitElement, money } from './base.js';
import { limitReachedBody, type LimitReachedBody } from './client.js';

/**
 * `<offerkit-paywall>`: given the 402 of a usage call (`paywall.show(error)` with the SDK's LimitReachedError,
 * or `paywall.body = error.body`), shows the limit reached, the upgrade offer and its checkout link.
 */
export class OfferkitPaywall extends OfferkitElement {
  static override properties = {
    ...OfferkitElement.properties,
    body: { attribute: false },
  };
  declare body: LimitReachedBody | null;

  constructor() {
    super();
    this.body = null;
  }

  /**
   * Shows a 402: pass what the SDK threw (a LimitReachedError) or its `body`. Returns false, showing nothing, for
   * anything else, so `catch (e) { if (!paywall.show(e)) throw e; }` passes other errors on.
   */
  show(errorOrBody: unknown): boolean {
    const body = limitReachedBody(errorOrBody);
    if (!body) return false;
    this.body = body;
    this.emit('shown', this.body);
    void this.updateComplete.then(() => this.renderRoot.querySelector<HTMLElement>('h2')?.focus());
    return true;
  }

  private dismiss() {
    this.body = null;
    this.emit('dismissed', null);
  }

  override render() {
    const b = this.body;
    if (!b) return nothing;
    const o = b.offer;
    const e = b.entitlement;
    return html`<section class="card" part="card" role="region" aria-labelledby="title">
      <h2 id="title" tabindex="-1" part="title">You have reached your ${e.name} limit</h2>
      <p>
        You have used <strong>${e.usage}</strong>${e.max === null ? nothing : html` of <strong>${e.max}</strong>`}
        ${e.name}.
      </p>
      ${
        o
          ? html`<div class="offer" part="offer">
              <h3>${o.plan.name}${o.name && o.name !== o.plan.name ? html` · ${o.name}` : nothing}</h3>
              <p class="price">
                <strong>${money(o.price, o.currency)}</strong> per ${o.interval}
                ${o.list_price > o.price ? html`<s class="muted">${money(o.list_price, o.currency)}</s>` : nothing}
                ${o.cycles ? html`<span class="muted">for ${o.cycles} ${o.interval}s</span>` : nothing}
              </p>
              <p>${o.new_limit === null ? `Unlimited ${e.name}` : `${o.new_limit} ${e.name}`}</p>
              <div class="actions">
                ${
                  o.checkout_url
                    ? html`<a class="button primary" part="cta" href=${o.checkout_url}>Upgrade to ${o.plan.name}</a>`
                    : html`<p class="muted">Upgrades are not available right now.</p>`
                }
                <button type="button" @click=${this.dismiss}>Not now</button>
              </div>
            </div>`
          : html`<p class="muted">${b.message}</p>
              <div class="actions"><button type="button" @click=${this.dismiss}>Close</button></div>`
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
      .price s {
        margin-left: 0.35rem;
      }
      h2:focus {
        outline: none;
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
