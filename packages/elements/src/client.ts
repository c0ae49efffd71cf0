/**
 * The one place the components talk HTTP. Its methods are named after the route table's `sdk` names
 * (`offers.getPublic`, `cancelSessions.answer`, ...) and take the same arguments in the same order as the
 * generated SDK's browser clients, so this module can be replaced by `@offerkit/sdk`'s PublishableClient and
 * AccountTokenClient without touching the components.
 */

/** The 402 body (`limit_reached`) of a usage call that would pass a blocking limit. */
export interface LimitReachedBody {
  error: 'limit_reached';
  message: string;
  entitlement: { id: string; name: string; usage: number; max: number | null };
  offer: {
    id: string | null;
    name: string;
    plan: { id: string; name: string };
    interval: 'month' | 'year';
    currency: string;
    price: number;
    list_price: number;
    cycles: number | null;
    new_limit: number | null;
    checkout_url: string | null;
    expires_at: string | null;
  } | null;
  retry_after_purchase: boolean;
}

export interface AccessEntry {
  id: string;
  feature: string;
  name: string;
  type: 'usage' | 'boolean';
  usage: number;
  max: number | null;
  left: number | null;
  can: boolean;
}
export interface EffectiveAccess {
  plan: { id: string; name: string; description?: string | null; isFree?: boolean };
  incentive: string | null;
  offer: string | null;
  addons: string[];
  entitlements: AccessEntry[];
}

export interface PublicPlan {
  plan: { id: string; name: string; description: string | null };
  prices: { interval: 'month' | 'year'; currency: string; price: number; list_price: number; cycles: number | null }[];
  extras: { entitlements: { id: string; max: number | null }[]; addons: string[]; cycles: number | null };
  entitlements: { id: string; max: number | null }[];
}
export interface PublicOffer {
  source: 'offer' | 'fallback' | 'regular';
  offer: { id: string; name: string; description: string | null; expires_at: string | null } | null;
  plans: PublicPlan[];
  bumps: { id: string; name: string; price: number; currency: string }[];
  ref: string | null;
}

export interface Checkout {
  id: string;
  status: 'created' | 'completed' | 'cancelled' | 'expired';
  offer: string | null;
  plan: string;
  interval: 'month' | 'year';
  currency: string;
  price: number;
  approve_url: string | null;
  bump_approve_url: string | null;
  account: string | null;
}
export interface CheckoutBody {
  interval?: 'month' | 'year';
  bumps?: string[];
  account?: string;
  email?: string;
  ref?: string;
  return_url?: string;
  cancel_url?: string;
}

export interface SessionOffer {
  kind: string;
  source: 'static' | 'dynamic';
  details: Record<string, unknown>;
  headline: string;
  body: string;
  cta: string;
  status: 'shown' | 'accepted' | 'declined';
}
export interface CancelSession {
  id: string;
  status: 'open' | 'saved' | 'cancelled' | 'abandoned';
  flow: { id: string; name: string };
  step: {
    id: string;
    type: 'question' | 'text' | 'offer' | 'confirm';
    title: string;
    decline_label: string | null;
    body: string | null;
    answers: { id: string; label: string }[];
    allow_text: boolean;
  };
  progress: { index: number; total: number };
  can_go_back: boolean;
  offer: SessionOffer | null;
  approve_url: string | null;
  result: Record<string, unknown> | null;
  account: {
    id: string;
    plan_name: string;
    subscription: { price: number; currency: string; interval: string; renews_at: string | null } | null;
  };
  /** The answers given so far, by question step. */
  answers: Record<string, { answer: string | null; text: string | null }>;
}

/** The service answered outside 2xx: `status`, `message` and the parsed `body`, as the SDK's APIError. */
export class ApiError<B = { error: string; [k: string]: unknown }> extends Error {
  readonly status: number;
  readonly body: B;
  constructor(status: number, body: B) {
    const b = body as { message?: unknown; error?: unknown } | null;
    super(typeof b?.message === 'string' ? b.message : typeof b?.error === 'string' ? b.error : `HTTP ${status}`);
    this.name = 'ApiError';
    this.status = status;
    this.body = body;
  }
}

export interface ClientOptions {
  /** The service's address; default: the page's origin. */
  baseUrl?: string;
  /** The app, `app_...`; read from an account token when not given. */
  appId?: string;
  /** A publishable key `pub_...` or an account token `act_...`. */
  credential: string;
}

/** The app and account an account token names (read, not verified: only the service can verify it). */
export function decodeAccountToken(token: string): { appId: string; accountId: string } | null {
  const m = /^act_([A-Za-z0-9_-]+)\.[A-Za-z0-9_-]+$/.exec(token ?? '');
  if (!m) return null;
  try {
    const json = atob(m[1].replace(/-/g, '+').replace(/_/g, '/'));
    const p = JSON.parse(json) as { a?: unknown; n?: unknown };
    return typeof p.a === 'string' && typeof p.n === 'string' ? { appId: p.a, accountId: p.n } : null;
  } catch {
    return null;
  }
}

export type Client = ReturnType<typeof createClient>;

export function createClient(options: ClientOptions) {
  const base = (options.baseUrl || globalThis.location?.origin || '').replace(/\/$/, '');
  const appId = options.appId || decodeAccountToken(options.credential)?.appId || '';
  const e = encodeURIComponent;
  const app = `${base}/apps/${e(appId)}`;

  async function call<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    const res = await fetch(`${app}${path}`, {
      method,
      headers: {
        Authorization: `Bearer ${options.credential}`,
        ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      /* not JSON: keep the text */
    }
    if (!res.ok) throw new ApiError(res.status, parsed as { error: string });
    return parsed as T;
  }
  const query = (q: Record<string, string | undefined>) => {
    const s = new URLSearchParams(Object.entries(q).filter((x): x is [string, string] => !!x[1])).toString();
    return s ? `?${s}` : '';
  };

  return {
    appId,
    access: {
      get: (accountId: string) => call<EffectiveAccess>('GET', `/namespaces/${e(accountId)}/plan`),
    },
    usage: {
      add: (accountId: string, entitlementId: string) =>
        call<{ entitlement: string; count: number }>(
          'POST',
          `/namespaces/${e(accountId)}/usage/${e(entitlementId)}/add`,
        ),
    },
    offers: {
      getPublic: (offerId: string, q: { fallback?: string; account?: string; ref?: string } = {}) =>
        call<PublicOffer>('GET', `/offers/${e(offerId)}/public${query(q)}`),
      checkout: (offerId: string, body: CheckoutBody & { plan: string; interval: 'month' | 'year' }) =>
        call<Checkout>('POST', `/offers/${e(offerId)}/checkout`, body),
    },
    plans: {
      checkout: (planId: string, body: CheckoutBody) => call<Checkout>('POST', `/plans/${e(planId)}/checkout`, body),
    },
    checkouts: {
      get: (checkoutId: string) => call<Checkout>('GET', `/checkouts/${e(checkoutId)}`),
      complete: (checkoutId: string) => call<Checkout>('POST', `/checkouts/${e(checkoutId)}/complete`, {}),
    },
    cancelSessions: {
      start: (body: { flow?: string } = {}) => call<CancelSession>('POST', `/cancel-sessions`, body),
      get: (id: string) => call<CancelSession>('GET', `/cancel-sessions/${e(id)}`),
      answer: (id: string, body: { step: string; answer?: string; text?: string }) =>
        call<CancelSession>('POST', `/cancel-sessions/${e(id)}/answer`, body),
      back: (id: string) => call<CancelSession>('POST', `/cancel-sessions/${e(id)}/back`, {}),
      decline: (id: string) => call<CancelSession>('POST', `/cancel-sessions/${e(id)}/decline`, {}),
      accept: (id: string, body: { return_url?: string; cancel_url?: string } = {}) =>
        call<CancelSession>('POST', `/cancel-sessions/${e(id)}/accept`, body),
      cancel: (id: string) => call<CancelSession>('POST', `/cancel-sessions/${e(id)}/cancel`, {}),
      close: (id: string) => call<CancelSession>('POST', `/cancel-sessions/${e(id)}/close`, {}),
    },
  };
}
