/**
 * The components talk HTTP only through `@offerkit/sdk` (bundled into dist/offerkit-elements.js): the pricing
 * table, the paywall's example and the usage meter through its PublishableClient, the cancel flow (and the usage
 * meter when given a token) through its AccountTokenClient. This module names the SDK's response types the
 * way the components speak of them and makes the clients from an element's connection attributes.
 */
import {
  AccountTokenClient as SdkAccountTokenClient,
  PublishableClient as SdkPublishableClient,
  decodeAccountToken as decodeToken,
  type ChangeEvent,
  type AccountTokenClientOptions,
  type PublishableClientOptions,
  type AccessGetResponse,
  type CancelSessionsGetResponse,
  type LimitReachedBody,
  type CheckoutsGetResponse,
  type OffersGetPublicResponse,
  type SubscriptionsChangeResponse,
  type SubscriptionsGetResponse,
  type SubscriptionsQuoteResponse,
} from '@offerkit/sdk';

export type { LimitReachedBody };
/** An account's effective access (`access.get`). */
export type EffectiveAccess = AccessGetResponse;
/** The public offer view (`offers.getPublic`). */
export type PublicOffer = OffersGetPublicResponse;
export type PublicPlan = PublicOffer['plans'][number];
/** A checkout (`checkouts.get`, `checkouts.complete`; what `offers.checkout` and `plans.checkout` answer). */
export type Checkout = CheckoutsGetResponse;
/** An account's subscription (`subscriptions.get`). */
export type Subscription = SubscriptionsGetResponse;
/** A requested plan change (`subscriptions.change`). */
export type PlanChange = SubscriptionsChangeResponse;
/** What a plan change would charge now and from when (`subscriptions.quote`). */
export type PlanQuote = SubscriptionsQuoteResponse;
/** The cancel session view every `cancelSessions` call answers. */
export type CancelSession = CancelSessionsGetResponse;
export type SessionOffer = NonNullable<CancelSession['offer']>;

/** An element's connection attributes. */
export interface Connection {
  /** The service's address; default: the page's origin. */
  baseUrl?: string | undefined;
  /** The app, `app_...`; read from the account token when not given. */
  appId?: string | undefined;
  publishableKey?: string | undefined;
  accountToken?: string | undefined;
}

/** The app and account an account token names (read, not verified: only the service can verify it), or null. */
export function decodeAccountToken(token: string | undefined): { appId: string; accountId: string } | null {
  if (!token) return null;
  try {
    const { appId, accountId } = decodeToken(token);
    return { appId, accountId };
  } catch {
    return null;
  }
}

const baseUrlOf = (c: Connection) => (c.baseUrl || globalThis.location?.origin || '').replace(/\/+$/, '');

/**
 * A fetch that, after a write to an account's routes (`/apps/:app/namespaces/:account/...`: usage, plan, add-ons,
 * subscription) that the service accepted (or answered 402), tells the page's components showing that account to
 * read it again. The bundle's clients use it, so usage recorded through them updates the meter and the paywall.
 */
export function watchingFetch(baseUrl: string, inner?: typeof fetch): typeof fetch {
  return async (input, init) => {
    const res = await (inner ?? globalThis.fetch)(input, init);
    try {
      const req = typeof input === 'object' && 'method' in input ? input : null;
      const method = (init?.method ?? req?.method ?? 'GET').toUpperCase();
      if (method !== 'GET' && method !== 'HEAD' && (res.ok || res.status === 402)) {
        const url = new URL(typeof input === 'string' ? input : 'href' in input ? input.href : input.url);
        const m = /\/apps\/([^/]+)\/namespaces\/([^/]+)(\/[^?]*)?$/.exec(url.pathname);
        if (m && m[3] !== '/token') touched(baseUrl, decodeURIComponent(m[1]), decodeURIComponent(m[2]));
      }
    } catch {
      // Never fail the caller's request over this.
    }
    return res;
  };
}

/**
 * `@offerkit/sdk`'s PublishableClient, as the bundle exports it: the same client, whose writes to an account
 * (`usage.add`, `usage.set` ...) also update every component on the page showing that account.
 */
export class PublishableClient extends SdkPublishableClient {
  constructor(options: PublishableClientOptions) {
    super({ ...options, fetch: watchingFetch(options.baseUrl, options.fetch) });
  }
}

/** `@offerkit/sdk`'s AccountTokenClient, as the bundle exports it (its writes update the page's components too). */
export class AccountTokenClient extends SdkAccountTokenClient {
  constructor(options: AccountTokenClientOptions) {
    super({ ...options, fetch: watchingFetch(options.baseUrl, options.fetch) });
  }
}

/** A PublishableClient for the connection (throws when the key or the app is missing). */
export function publishableClient(c: Connection): PublishableClient {
  if (!c.publishableKey) throw new Error('Set publishable-key');
  const appId = c.appId || decodeAccountToken(c.accountToken)?.appId;
  if (!appId) throw new Error('Set app-id');
  return new PublishableClient({ baseUrl: baseUrlOf(c), appId, publishableKey: c.publishableKey });
}

/** An AccountTokenClient for the connection (throws when the token is missing or unreadable). */
export function accountTokenClient(c: Connection): AccountTokenClient {
  if (!c.accountToken) throw new Error('Set account-token');
  return new AccountTokenClient({
    baseUrl: baseUrlOf(c),
    accountToken: c.accountToken,
    ...(c.appId ? { appId: c.appId } : {}),
  });
}

/** A credit pack on sale, as a `credits_exhausted` 402 and `creditPacks.list` show it. */
export interface Pack {
  id: string;
  pool?: string;
  amount: number;
  price: number;
  currency: string;
}

/** The 402 of a draw its credits pool cannot cover (docs/billing.md, Credits): the upgrade and the packs on sale. */
export interface CreditsExhaustedBody {
  error: 'credits_exhausted';
  message: string;
  pool: { id: string; name: string; balance: number };
  /** The entity whose balance fell short, on a per-entity pool. */
  entity?: string;
  entitlement: { id: string; name: string; cost: number; amount: number };
  need: number;
  offer: LimitReachedBody['offer'];
  packs: Pack[];
}

/** What the paywall shows: a usage limit reached, or a credits pool run dry. */
export type PaywallBody = LimitReachedBody | CreditsExhaustedBody;

/**
 * The 402 body in what a usage call threw (`limit_reached` or `credits_exhausted`): the SDK's LimitReachedError
 * (from this bundle's SDK or the page's own copy, so not by `instanceof`), any error with `status` 402 and a
 * `body`, or the body itself.
 */
export function limitReachedBody(errorOrBody: unknown): PaywallBody | null {
  const e = errorOrBody as { status?: unknown; body?: unknown } | null;
  const body = (e && typeof e === 'object' && e.status === 402 && 'body' in e ? e.body : errorOrBody) as PaywallBody;
  return body?.error === 'limit_reached' || body?.error === 'credits_exhausted' ? body : null;
}

/** What the components on a page know about one account: its access and, when readable, its subscription. */
export interface AccountState {
  account: string;
  access: EffectiveAccess;
  /** Null when the account has none, or when no component on the page holds an account token to read it. */
  subscription: Subscription | null;
}

/** How a component reads an account: its access always; its subscription only with an account token. */
export interface AccountReader {
  access(account: string): Promise<EffectiveAccess>;
  subscription?: (account: string) => Promise<Subscription | null>;
  /** The change stream its account token reads (that account's events and the catalog's), from `Last-Event-ID`. */
  changes?: (lastEventId: string | null, signal: AbortSignal) => AsyncIterable<ChangeEvent>;
}

type Listener = (state: AccountState) => void;

/**
 * One shared state per (service, app, account) on a page: every component showing that account subscribes to it,
 * and a purchase, a plan change or recorded usage refreshes it once for all of them, so the meter, the paywall and
 * the pricing table all show the new state without a reload.
 *
 * Reads: the access view first; the subscription (account token only) when the access view says there is one
 * (`subscription_status`), so a customer without one costs no request the service answers 404. On load, `load()`:
 * the components of a page that attach in the same moment share one read (it starts once they have attached). After
 * a change, `refresh()`: a refresh asked for while one runs runs once more after it (what it reads may predate the
 * change that asked).
 */
export class AccountStore {
  state: AccountState | null = null;
  private listeners = new Set<Listener>();
  private readers = new Set<AccountReader>();
  private running: Promise<AccountState> | null = null;
  /** The reader the running read uses, once it has started (null while it waits for the page's components). */
  private runningWith: AccountReader | null = null;
  private again: Promise<AccountState> | null = null;
  /** Whether `state` was read with a reader that reads the subscription. */
  private stateWithSubscription = false;
  /** The change stream followed while a component holds the account's token; `opened`: its first answer. */
  private live: AbortController | null = null;
  private opened: Promise<unknown> | null = null;
  /** The last event id seen: a stream opened again resumes after it. */
  private last: string | null = null;

  constructor(readonly account: string) {}

  /** Whether a component on the page shows this account (it can be read). */
  get shown(): boolean {
    return this.readers.size > 0;
  }

  /** Adds a component: its reader (used when it is the most capable) and its listener. Returns the detach. */
  attach(reader: AccountReader, listener: Listener): () => void {
    this.readers.add(reader);
    this.listeners.add(listener);
    if (this.state) listener(this.state);
    this.follow();
    return () => {
      this.readers.delete(reader);
      this.listeners.delete(listener);
      if (![...this.readers].some((r) => r.changes)) {
        this.live?.abort();
        this.live = null;
      }
    };
  }

  /**
   * Follows the account's change stream (GET /apps/:appId/stream, with the token in the Authorization header) while
   * a component holds the account's token: a `usage`, `account`, `credits` event of the account, a `catalog` or a
   * `resync` reads it again, so the meter and the paywall show changes made anywhere without polling. A cut stream
   * reconnects with its `Last-Event-ID` (1 s, doubling to 30 s) and gets what it missed; a refused one (401, 403)
   * is left, and the components read as without it (on load, after writes through the bundle's clients, refresh()).
   */
  private follow() {
    const reader = [...this.readers].find((r) => r.changes);
    if (!reader || this.live) return;
    const stop = (this.live = new AbortController());
    let opened = () => {};
    // The first read waits for the stream's start (at most 3 s): no change falls between the two.
    this.opened = new Promise((r) => setTimeout((opened = r as () => void), 3000));
    void (async () => {
      for (let wait = 1000; !stop.signal.aborted; wait = Math.min(wait * 2, 30_000)) {
        try {
          for await (const e of reader.changes!(this.last, stop.signal)) {
            opened();
            wait = 1000;
            this.last = e.id || this.last;
            const a = (e.data as { accountId?: string }).accountId;
            if (e.type !== 'ready' && e.type !== 'keep-alive' && (!a || a === this.account))
              void this.refresh().catch(() => undefined);
          }
        } catch (e) {
          const status = (e as { status?: number }).status ?? 500;
          if (status < 500 && status !== 408 && status !== 429) return opened();
        }
        opened();
        await new Promise((r) => setTimeout(r, wait));
      }
    })();
  }

  /** Whether a component on the page can read the subscription (it holds the account's token). */
  private get wantsSubscription(): boolean {
    return [...this.readers].some((r) => r.subscription);
  }

  /**
   * The account as the page's components need it on load: the read already running or done when it serves them
   * (one read for every component of the page), else a new one.
   */
  load(): Promise<AccountState> {
    const wants = this.wantsSubscription;
    if (this.again) return this.again;
    if (this.running && (!this.runningWith || this.runningWith.subscription || !wants)) return this.running;
    if (this.state && !this.running && (this.stateWithSubscription || !wants)) return Promise.resolve(this.state);
    return this.refresh();
  }

  /** Reads the account again (with an account token when a component has one) and tells every component. */
  refresh(): Promise<AccountState> {
    if (this.running) {
      this.again ??= this.running
        .catch(() => undefined)
        .then(() => {
          this.again = null;
          return this.refresh();
        });
      return this.again;
    }
    this.running = this.read().finally(() => {
      this.running = null;
      this.runningWith = null;
    });
    return this.running;
  }

  private async read(): Promise<AccountState> {
    // Let the page's other components attach first (they are upgraded and updated in the same moment), so one read
    // serves them all, with the most capable reader among them.
    await new Promise((r) => setTimeout(r, 0));
    await this.opened;
    const readers = [...this.readers];
    const reader = readers.find((r) => r.subscription) ?? readers[0];
    if (!reader) throw new Error('No component reads this account');
    this.runningWith = reader;
    const access = await reader.access(this.account);
    // Without an account token the subscription last read stays (as long as the access view says there is one).
    const subscription = !access.subscription_status
      ? null
      : reader.subscription
        ? await reader.subscription(this.account)
        : (this.state?.subscription ?? null);
    this.state = { account: this.account, access, subscription };
    this.stateWithSubscription = !!reader.subscription;
    for (const l of [...this.listeners]) l(this.state);
    return this.state;
  }
}

const stores = new Map<string, AccountStore>();

/** The page's one store for an account of an app at a service. */
export function accountStore(c: Connection, account: string): AccountStore {
  const appId = c.appId || decodeAccountToken(c.accountToken)?.appId || '';
  const key = `${baseUrlOf(c)}|${appId}|${account}`;
  let s = stores.get(key);
  if (!s) stores.set(key, (s = new AccountStore(account)));
  return s;
}

/** After a write to an account through the bundle's clients: the components showing it read it again. */
function touched(baseUrl: string, appId: string, account: string) {
  const s = stores.get(`${baseUrl.replace(/\/+$/, '')}|${appId}|${account}`);
  if (s?.shown) void s.refresh().catch(() => undefined);
}

/**
 * Tells every component on the page showing this account to read it again: call it after your own code records
 * usage or changes the account (the components call it after a purchase or a plan change).
 */
export function refreshAccount(c: Connection, account: string): Promise<AccountState> {
  return accountStore(c, account).refresh();
}

/** Whether a subscription still bills (active or paused): the one a new plan would replace. */
export const isLive = (s: Subscription | null | undefined): s is Subscription =>
  !!s && (s.status === 'active' || s.status === 'paused');
