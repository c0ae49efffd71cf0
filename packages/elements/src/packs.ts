import { html } from 'lit';
import { OfferkitElement, PACK_ORDER } from './base.js';
import { forgetReturn, isReturnOf, keepTrip, keptTrip, type Trip } from './returns.js';
import type { Pack } from './client.js';

/** A pack order sent to the provider for approval, kept across the trip (one per page session). */
interface PendingPack extends Trip {
  id: string;
  appId: string;
  /** The element that bought it (its tag): it completes it when the page has one. */
  by: string;
}

/**
 * What the paywall and the usage meter share to sell credit packs (issue 42): the pack's button ("Buy 10,000 AI
 * credits for $10.00"), its order (`creditPacks.checkout`) with the credential the element holds (the publishable
 * key, else the account token) and the trip to approve it at the provider, and back on the page the order completed
 * (`creditPacks.complete`: the credits are granted once PayPal confirms the capture, never on the return alone).
 */
export class OfferkitPackSeller extends OfferkitElement {
  static override properties = {
    ...OfferkitElement.properties,
    returnUrl: { attribute: 'return-url' },
    busy: { state: true },
    error: { state: true },
    status: { state: true },
  };
  /** Where the provider sends the buyer back; default: this page (its URL). */
  declare returnUrl: string;
  declare busy: boolean;
  declare error: string;
  declare status: string;
  private packTaken = false;

  constructor() {
    super();
    this.returnUrl = '';
    this.busy = false;
    this.error = '';
    this.status = '';
  }

  private packClient() {
    return this.canPublishable ? this.publishable() : this.tokenClient();
  }

  /** The packs on sale (a publishable key or an account token reads only those). */
  protected listPacks(): Promise<Pack[]> {
    return this.packClient().creditPacks.list({ archived: 'false' });
  }

  /** One button per pack: "Buy 10,000 AI credits for $10.00". */
  protected packButtons(packs: Pack[], poolName: string, account: string) {
    return packs.map(
      (p) =>
        html`<button type="button" part="pack" ?disabled=${this.busy} @click=${() => this.buyPack(p, account)}>
          Buy ${this.number(p.amount)} ${poolName} for ${this.money(p.price, p.currency)}
        </button>`,
    );
  }

  /**
   * Orders the pack for the account and sends the buyer to approve it (after a cancelable `offerkit-pack-checkout`
   * event with the order), keeping the order across the trip so that, back on the page, this element completes it.
   */
  private async buyPack(pack: Pack, account: string) {
    if (this.busy) return;
    this.busy = true;
    this.error = '';
    try {
      const c = this.packClient();
      const { url, ...trip } = this.newTrip(this.returnUrl);
      const order = await c.creditPacks.checkout(pack.id, { account, return_url: url });
      if (!this.emit('pack-checkout', order, true) || !order.approve_url) return;
      keepTrip(PACK_ORDER, { ...trip, id: order.id, appId: c.appId, by: this.localName } as PendingPack);
      globalThis.location.assign(order.approve_url);
    } catch (e) {
      this.error = this.fail(e);
    } finally {
      this.busy = false;
    }
  }

  /**
   * Back from approving a pack this page ordered (the element that ordered it takes it, or the first that can when
   * that one is not on the page): completes the order, asking again while PayPal has not confirmed it; once the
   * credits are granted every component of the account shows them and `offerkit-pack-completed` is dispatched.
   */
  protected async resumePack() {
    const p = keptTrip<PendingPack>(PACK_ORDER);
    if (this.packTaken || !p || !isReturnOf(p) || p.appId !== this.packClient().appId) return;
    if (p.by !== this.localName && globalThis.document?.querySelector(p.by)) return;
    this.packTaken = true;
    sessionStorage.removeItem(PACK_ORDER);
    forgetReturn(p);
    this.busy = true;
    this.status = 'Completing your purchase…';
    try {
      let o = await this.packClient().creditPacks.complete(p.id);
      for (let i = 0; o.status === 'created' && i < 30; i++) {
        await new Promise((r) => setTimeout(r, 1000));
        o = await this.packClient().creditPacks.complete(p.id);
      }
      this.status = '';
      if (o.status !== 'completed')
        throw new Error(o.status === 'created' ? 'The payment is still being confirmed.' : `Order ${o.status}.`);
      await this.accountStore?.refresh().catch(() => undefined);
      const pool = this.accountState?.access.credits?.find((x) => x.id === o.pool)?.name ?? 'credits';
      this.status = `Thank you! ${this.number(o.amount)} ${pool} were added.`;
      this.emit('pack-completed', o);
    } catch (e) {
      this.error = this.fail(e);
    } finally {
      this.busy = false;
    }
  }
}
