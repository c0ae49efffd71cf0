/**
 * The components talk HTTP only through `@offerkit/sdk` (bundled into dist/offerkit-elements.js): the pricing
 * table, the paywall's example and the usage meter through its PublishableClient, the cancel flow (and the usage
 * meter when given a token) through its AccountTokenClient. This module names the SDK's response types the
 * way the components speak of them and makes the clients from an element's connection attributes.
 */
import {
  AccountTokenClient,
  PublishableClient,
  decodeAccountToken as decodeToken,
  type AccessGetResponse,
  type CancelSessionsGetResponse,
  type LimitReachedBody,
  type OffersCheckoutResponse,
  type OffersGetPublicResponse,
} from '@offerkit/sdk';

export { AccountTokenClient, PublishableClient };
export type { LimitReachedBody };
/** An account's effective access (`access.get`). */
export type EffectiveAccess = AccessGetResponse;
/** The public offer view (`offers.getPublic`). */
export type PublicOffer = OffersGetPublicResponse;
export type PublicPlan = PublicOffer['plans'][number];
/** A checkout (`offers.checkout`, `plans.checkout`, `checkouts.complete`). */
export type Checkout = OffersCheckoutResponse;
/** The cancel session view every `cancelSessions` call answers. */
export type CancelSession = CancelSessionsGetResponse;
export type SessionOffer = NonNullable<CancelSession['offer']>;

/** An element's connection attributes. */
export interface Connection {
  /** The service's address; default: the page's origin. */
  baseUrl?: string;
  /** The app, `app_...`; read from the account token when not given. */
  appId?: string;
  publishableKey?: string;
  accountToken?: string;
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
  return new AccountTokenClient({ baseUrl: baseUrlOf(c), accountToken: c.accountToken, appId: c.appId || undefined });
}

/**
 * The 402 body in what a usage call threw: the SDK's LimitReachedError (from this bundle's SDK or the page's
 * own copy, so not by `instanceof`), any error with `status` 402 and a `body`, or the body itself.
 */
export function limitReachedBody(errorOrBody: unknown): LimitReachedBody | null {
  const e = errorOrBody as { status?: unknown; body?: unknown } | null;
  const body = e && typeof e === 'object' && e.status === 402 && 'body' in e ? e.body : errorOrBody;
  return (body as LimitReachedBody | null)?.error === 'limit_reached' ? (body as LimitReachedBody) : null;
}
