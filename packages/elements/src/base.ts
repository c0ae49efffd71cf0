import { LitElement } from 'lit';
import {
  forgetReturn,
  isReturnOf,
  keepTrip,
  keptTrip,
  newTrip,
  restoredAddress,
  returnedNonce,
  RETURN_PARAM,
  type Trip,
} from './returns.js';
import {
  accountStore,
  accountTokenClient,
  decodeAccountToken,
  isLive,
  publishableClient,
  type AccountReader,
  type AccountState,
  type AccountStore,
  type AccountTokenClient,
  type Checkout,
  type Connection,
  type PlanChange,
  type PlanQuote,
  type PublishableClient,
} from './client.js';
import { streamChanges } from '@offerkit/sdk';
import { baseStyles } from './theme.js';
import { day, money } from './format.js';

/** A plan change sent to the provider for approval, kept across the trip (one per page session). */
const PENDING_CHANGE = 'offerkit:pending-change';
interface PendingChange extends Trip {
  appId: string;
  account: string;
  plan: string;
  interval: 'month' | 'year';
  /** The element that asked (its tag): it takes the return when the page has one. */
  by: string;
}

/** A checkout sent to the provider for approval, kept across the trip (one per page session). */
const PENDING_CHECKOUT = 'offerkit:pending-checkout';
/** A cancel flow's save offer waiting for its approval at the provider (cancel-flow.ts). */
export const CANCEL_APPROVAL = 'offerkit:cancel-approval';
/** A credit pack's order waiting for its approval at the provider (packs.ts). */
export const PACK_ORDER = 'offerkit:pending-pack';
/** The trips a page may be coming back from, each taken by one element. */
const TRIP_KEYS = [PENDING_CHANGE, PENDING_CHECKOUT, CANCEL_APPROVAL, PACK_ORDER];
export interface PendingCheckout extends Trip {
  id: string;
  appId: string;
  /** The subscription's approval link, still to visit after the bump order's. */
  next: string | null;
  /** The interval bought, shown again on return. */
  interval: 'month' | 'year';
  /** The element that started it (its tag): it completes it when the page has one. */
  by: string;
}

/**
 * What every component shares: the connection attributes (`base-url`, `app-id`, `publishable-key` or
 * `account-token`), the SDK clients made from them, and the theme (CSS custom properties with defaults).
 */
export class OfferkitElement extends LitElement {
  static override properties = {
    baseUrl: { attribute: 'base-url' },
    appId: { attribute: 'app-id' },
    publishableKey: { attribute: 'publishable-key' },
    accountToken: { attribute: 'account-token' },
    locale: {},
    client: { attribute: false },
    accountState: { state: true },
  };
  declare baseUrl: string;
  declare appId: string;
  declare publishableKey: string;
  declare accountToken: string;
  /**
   * The language numbers, amounts and dates are written in (a BCP 47 tag such as `de-DE`); default: the nearest
   * `lang` attribute (the element's own, an ancestor's, the page's), else the browser's language.
   */
  declare locale: string;
  /**
   * Set this to an `@offerkit/sdk` PublishableClient or AccountTokenClient of your own (other timeouts, retries,
   * headers or fetch) instead of the ones the element makes from its attributes.
   */
  declare client: PublishableClient | AccountTokenClient | null;
  /** The shared state of the account this element shows (see `bindAccount`), null until read. */
  declare accountState: AccountState | null;
  private made = new Map<string, PublishableClient | AccountTokenClient>();

  constructor() {
    super();
    this.baseUrl = '';
    this.appId = '';
    this.publishableKey = '';
    this.accountToken = '';
    this.locale = '';
    this.client = null;
    this.accountState = null;
  }

  private store: AccountStore | null = null;
  private detach: (() => void) | null = null;
  private bound = '';

  override connectedCallback() {
    super.connectedCallback();
    // Back in the page: attach again to the account it showed (the next `bindAccount` call does it).
    this.bound = '';
  }

  override disconnectedCallback() {
    super.disconnectedCallback();
    this.detach?.();
    this.detach = null;
  }

  /** The account named by the token, if any (read, not verified). */
  protected get tokenAccount(): string {
    return decodeAccountToken(this.accountToken)?.accountId ?? '';
  }

  /**
   * Attaches the element to the page's shared state of `account` (one per service, app and account), so what one
   * component changes (a purchase, a plan change, usage) every component shows. Called from `updated`; attaching
   * anew only when the account or the connection changed. Returns the store, or null without an account.
   */
  protected bindAccount(account: string): AccountStore | null {
    const c = this.connection();
    const key = account ? `${c.baseUrl}|${c.appId}|${c.publishableKey}|${c.accountToken}|${account}` : '';
    if (key === this.bound && (this.store || !account)) return this.store;
    this.detach?.();
    this.detach = null;
    this.store = null;
    this.bound = key;
    if (!account) return null;
    this.store = accountStore(c, account);
    this.detach = this.store.attach(this.reader(account), (state) => {
      this.accountState = state;
      this.accountChanged(state);
      this.emit('account-updated', state);
    });
    return this.store;
  }

  /** The bound account's store (null when the element shows no account). */
  protected get accountStore(): AccountStore | null {
    return this.store;
  }

  /** Called with each new state of the bound account, before `offerkit-account-updated` is dispatched. */
  protected accountChanged(_state: AccountState): void {}

  /** The token when it is the account's own (it reads the subscription too), else the publishable key. */
  private reader(account: string): AccountReader {
    const own = () => this.canToken && (!this.accountToken || this.tokenAccount === account);
    const reader: AccountReader = {
      access: (a) => (own() ? this.tokenClient() : this.publishable()).access.get(a),
    };
    if (own())
      reader.subscription = async (a) => {
        try {
          return await this.tokenClient().subscriptions.get(a);
        } catch (e) {
          if ((e as { status?: number }).status === 404) return null;
          throw e;
        }
      };
    // The account's change stream, with the token as a header (no credential in a URL): the `account-token`
    // attribute's (a `client` property of your own keeps its token to itself: no stream, reads as before).
    if (own() && this.accountToken)
      reader.changes = (lastEventId, signal) => {
        const c = this.tokenClient();
        return streamChanges({
          baseUrl: c.baseUrl,
          appId: c.appId,
          credential: this.accountToken,
          lastEventId,
          signal,
        });
      };
    return reader;
  }

  /** Whether the element can change the bound account's plan: an account token for it, and a live subscription. */
  protected canSwitch(): boolean {
    const s = this.accountState;
    return !!s && this.canToken && isLive(s.subscription) && s.subscription.status === 'active';
  }

  /**
   * What a plan change would charge now and from when (`POST .../subscription/change/quote` with the account token),
   * asking nobody: the confirm step shows it before anything is asked of the provider (`offerkit-plan-quote`).
   */
  protected async quotePlan(plan: string, interval: 'month' | 'year'): Promise<PlanQuote> {
    const account = this.accountState?.account;
    if (!account) throw new Error('Set account-token to change the plan');
    const quote = await this.tokenClient().subscriptions.quote(account, { plan, interval });
    this.emit('plan-quote', quote);
    return quote;
  }

  /**
   * Requests a plan change through `POST .../subscription/change` with the account token and sends the buyer to
   * the provider to approve it (after a cancelable `offerkit-plan-change` event). With the quote's
   * `proration_date` the provider is asked for exactly the quoted amount. A move to a free plan has nothing to
   * approve: the subscription ends at the renewal and the account's state shows it. Throws what the service
   * answered (409 `change_pending`, `same_plan` ...).
   */
  protected async switchPlan(
    plan: string,
    interval: 'month' | 'year',
    returnUrl?: string,
    quote?: PlanQuote,
  ): Promise<PlanChange | null> {
    const account = this.accountState?.account;
    if (!account) throw new Error('Set account-token to change the plan');
    // The return address is marked as this trip's, so only this return is taken (and cleaned) on the way back.
    const { url, ...trip } = this.newTrip(returnUrl);
    const change = await this.tokenClient().subscriptions.change(account, {
      plan,
      interval,
      return_url: url,
      cancel_url: url,
      ...(quote ? { proration_date: quote.proration_date } : {}),
    });
    // Nothing to approve (a move to the free plan at the renewal): the page's components show the new state.
    if (!change.approve_url) void this.store?.refresh().catch(() => undefined);
    if (!this.emit('plan-change', change, true) || !change.approve_url) return change;
    const pending: PendingChange = {
      ...trip,
      appId: this.tokenClient().appId,
      account,
      plan,
      interval,
      by: this.localName,
    };
    keepTrip(PENDING_CHANGE, pending);
    globalThis.location.assign(change.approve_url);
    return change;
  }

  /** Whether the page was loaded by a buyer coming back from approving a plan change this page asked for. */
  protected get switchReturning(): boolean {
    return isReturnOf(keptTrip<PendingChange>(PENDING_CHANGE));
  }

  /**
   * Back from the provider with a plan change this page sent there (the first element that sees it takes it):
   * reads the account until the change applied, was scheduled for the renewal, or was dropped, then dispatches
   * `offerkit-plan-changed` (every element on the page shows the new state through the shared store). Returns
   * the outcome, or null when there is nothing to resume.
   */
  protected async resumeSwitch(): Promise<'changed' | 'scheduled' | 'not_changed' | 'waiting' | null> {
    const p = keptTrip<PendingChange>(PENDING_CHANGE);
    const store = this.store;
    if (!p || !store || !isReturnOf(p)) return null;
    if (p.account !== store.account || p.appId !== this.tokenClient().appId) return null;
    if (p.by !== this.localName && globalThis.document?.querySelector(p.by)) return null;
    sessionStorage.removeItem(PENDING_CHANGE);
    forgetReturn(p);
    for (let i = 0; i < 30; i++) {
      const { subscription: s } = await store.refresh();
      const outcome =
        s?.plan === p.plan && s.interval === p.interval && !s.pending_change
          ? 'changed'
          : s?.pending_change?.plan === p.plan && s.pending_change.scheduled_at
            ? 'scheduled'
            : !s?.pending_change
              ? 'not_changed'
              : null;
      if (outcome) {
        this.emit('plan-changed', { outcome, subscription: s });
        return outcome;
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
    return 'waiting';
  }

  /** Whether a publishable-key client can be had (the attribute, or a `client` that is one). */
  protected get canPublishable(): boolean {
    return !!this.publishableKey || !!(this.client && 'offers' in this.client);
  }

  /** Whether an account-token client can be had (the attribute, or a `client` that is one). */
  protected get canToken(): boolean {
    return !!this.accountToken || !!(this.client && 'cancelSessions' in this.client);
  }

  private connection(): Connection {
    return {
      baseUrl: this.baseUrl || undefined,
      appId: this.appId || undefined,
      publishableKey: this.publishableKey || undefined,
      accountToken: this.accountToken || undefined,
    };
  }

  /** One client per kind and connection, made again only when an attribute changes. */
  private reuse<C extends PublishableClient | AccountTokenClient>(kind: string, make: () => C): C {
    const key = `${kind}|${this.baseUrl}|${this.appId}|${kind === 'P' ? this.publishableKey : this.accountToken}`;
    let c = this.made.get(key) as C | undefined;
    if (!c) {
      c = make();
      this.made.clear();
      this.made.set(key, c);
    }
    return c;
  }

  /** The publishable-key client: the `client` property when it is one (it has `offers`), else from attributes. */
  protected publishable(): PublishableClient {
    if (this.client && 'offers' in this.client) return this.client;
    return this.reuse('P', () => publishableClient(this.connection()));
  }

  /** The account-token client: the `client` property when it is one (it has `cancelSessions`), else from attributes. */
  protected tokenClient(): AccountTokenClient {
    if (this.client && 'cancelSessions' in this.client) return this.client;
    return this.reuse('T', () => accountTokenClient(this.connection()));
  }

  /** Dispatches a composed, bubbling `offerkit-<name>` event; returns false when a listener prevented it. */
  protected emit(name: string, detail: unknown, cancelable = false): boolean {
    return this.dispatchEvent(
      new CustomEvent(`offerkit-${name}`, { detail, bubbles: true, composed: true, cancelable }),
    );
  }

  /**
   * What went wrong, in words a buyer (or the developer embedding the element) can act on: a refused credential
   * (401) names the attribute to check, an unreachable service the address, a rate limit the wait; other answers carry
   * the service's own message (`error`, or `message` for codes such as `limit_reached`). `via` says which
   * credential made the call when the caller knows.
   */
  protected errorText(e: unknown, via?: 'publishable' | 'token'): string {
    const err = e as { status?: number; name?: string; message?: string; headers?: Headers } | null;
    const status = typeof err?.status === 'number' ? err.status : 0;
    // A 401 is a credential the service did not accept; a 403 (allowed in general, not for this, e.g. a read-only
    // app) keeps the service's words.
    if (status === 401) {
      const kind =
        via ??
        (this.canToken && !this.canPublishable
          ? 'token'
          : this.canPublishable && !this.canToken
            ? 'publishable'
            : null);
      if (kind === 'token')
        return "This page's account token was not accepted (it may have expired): reload the page to get a new one.";
      if (kind === 'publishable')
        return "This page's publishable key was not accepted: check the publishable-key (pub_...) and app-id attributes.";
      return (
        "This page's publishable key or account token was not accepted: check the publishable-key, app-id and " +
        'account-token attributes.'
      );
    }
    if (status === 429) {
      const wait = Number(err?.headers?.get?.('retry-after'));
      return `Too many requests just now: try again${wait > 0 ? ` in ${this.number(wait)} seconds` : ' in a moment'}.`;
    }
    if (status >= 500) return 'The service had a problem answering: try again in a moment.';
    if (err?.name === 'APIConnectionError' || err?.name === 'APITimeoutError' || e instanceof TypeError)
      return `Could not reach the service${this.baseUrl ? ` at ${this.baseUrl}` : ''}: check the connection and the base-url attribute.`;
    return e instanceof Error ? e.message : String(e);
  }

  /**
   * Says what went wrong on the element (its readable text, see `errorText`) and dispatches `offerkit-error`
   * with `{ message, status, reason, error }`. Returns the text.
   */
  protected fail(e: unknown, via?: 'publishable' | 'token'): string {
    const message = this.errorText(e, via);
    const err = e as { status?: unknown; body?: { reason?: unknown } } | null;
    this.emit('error', {
      message,
      status: typeof err?.status === 'number' ? err.status : null,
      reason: typeof err?.body?.reason === 'string' ? err.body.reason : null,
      error: e,
    });
    return message;
  }

  /**
   * This page's address, to come back to from the provider: without its fragment, and, while it is still the return
   * of an earlier trip, as it was before that trip (returns.ts). Every parameter of the host page stays.
   */
  protected pageUrl(): string {
    const href = globalThis.location.href;
    const nonce = returnedNonce(href);
    const earlier = nonce ? TRIP_KEYS.map((k) => keptTrip(k)).find((t) => t?.nonce === nonce) : null;
    const url = new URL(earlier ? restoredAddress(href, earlier.back) : href);
    url.searchParams.delete(RETURN_PARAM);
    url.hash = '';
    return url.toString();
  }

  /** The language to write numbers, amounts and dates in (see `locale`). */
  protected get locales(): string | undefined {
    const tag = this.locale || this.closest<HTMLElement>('[lang]')?.lang || globalThis.navigator?.language || undefined;
    try {
      return tag ? Intl.getCanonicalLocales(tag)[0] : undefined;
    } catch {
      return undefined; // an unknown tag: the browser's default
    }
  }

  /** "1,234" in the element's language. */
  protected number(n: number): string {
    return new Intl.NumberFormat(this.locales).format(n);
  }

  /** "$14.25" (or "14,25 $") in the element's language. */
  protected money(amount: number, currency: string): string {
    return money(amount, currency, this.locales);
  }

  /** "December 26, 2026" in the element's language. */
  protected day(iso: string): string {
    return day(iso, this.locales);
  }

  /**
   * Sends the buyer to approve a checkout this element made (after a cancelable `offerkit-checkout` event), keeping
   * it across the trip so that, back on the page, this element completes it (`resumeCheckout`).
   */
  protected goToCheckout(c: Checkout, interval: 'month' | 'year', trip: Trip): boolean {
    if (!this.emit('checkout', c, true) || !c.approve_url) return false;
    // The approval link through the service (`open_url`) when there is one, so the offer funnel sees it opened.
    const approve = c.open_url ?? c.approve_url;
    // The bump order first: the checkout completes on its own once the subscription is active, and takes the
    // bumps only if their order is approved by then.
    const first = c.bump_approve_url ?? approve;
    const pending: PendingCheckout = {
      ...trip,
      id: c.id,
      appId: this.publishable().appId,
      next: c.bump_approve_url ? approve : null,
      interval,
      by: this.localName,
    };
    keepTrip(PENDING_CHECKOUT, pending);
    globalThis.location.assign(first);
    return true;
  }

  /**
   * Back from the provider with a checkout this page started: the element that started it takes it (or the first
   * that can, when that one is not on the page). Sends the buyer on to the subscription's approval when the bump
   * order came first (returns null, the page is leaving); else returns what was bought, to `completeCheckout`.
   */
  protected takeReturnedCheckout(): PendingCheckout | null {
    const p = keptTrip<PendingCheckout>(PENDING_CHECKOUT);
    if (!p || !this.canPublishable || !isReturnOf(p) || p.appId !== this.publishable().appId) return null;
    if (p.by && p.by !== this.localName && globalThis.document?.querySelector(p.by)) return null;
    if (p.next) {
      keepTrip(PENDING_CHECKOUT, { ...p, next: null } as PendingCheckout);
      globalThis.location.assign(p.next);
      return null;
    }
    sessionStorage.removeItem(PENDING_CHECKOUT);
    forgetReturn(p);
    return p;
  }

  /**
   * A return address for a trip to the provider (`returnUrl`, else this page), marked as the trip's own: pass `url`
   * to the provider and the trip to `goToCheckout`.
   */
  protected newTrip(returnUrl?: string): Trip & { url: string } {
    return newTrip(returnUrl || this.pageUrl());
  }

  /**
   * Completes a returned checkout (asking again while the provider is still activating it); once completed, every
   * component showing the account reads it again and `offerkit-checkout-completed` is dispatched.
   */
  protected async completeCheckout(id: string): Promise<Checkout> {
    let c: Checkout = await this.publishable().checkouts.complete(id);
    for (let i = 0; c.status === 'created' && i < 30; i++) {
      await new Promise((r) => setTimeout(r, 1000));
      c = await this.publishable().checkouts.complete(id);
    }
    if (c.status === 'completed') {
      await this.accountStore?.refresh().catch(() => undefined);
      this.emit('checkout-completed', c);
    }
    return c;
  }

  static baseStyles = baseStyles;
}
