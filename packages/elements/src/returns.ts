/**
 * Trips to the payment provider and back. A component that sends the buyer away (a checkout, a plan change, a cancel
 * flow's save) gives the provider a return address marked with a parameter of its own, `offerkit_return=<nonce>`,
 * and keeps the trip (its nonce and the address as it was before marking) in sessionStorage. Back on a page, a
 * component takes a return only when the address carries the nonce of a trip it keeps, and then puts the address
 * back as it was: the marker and what the provider added go, every parameter of the host page stays (its own `token`
 * too, even when the provider wrote over it). An address without the marker is the host page's: never touched.
 */

/** The parameter the components add to a return address they give the provider. */
export const RETURN_PARAM = 'offerkit_return';

/**
 * What a provider may add to a return address (PayPal: `subscription_id`, `ba_token` and `token` for a subscription,
 * `token` and `PayerID` for an order).
 */
export const PROVIDER_RETURN_PARAMS = ['subscription_id', 'ba_token', 'token', 'PayerID'];

/** A trip to the provider: the nonce its return address carries, and that address before it was marked. */
export interface Trip {
  nonce: string;
  back: string;
}

/** A nonce for a trip (random; `crypto.getRandomValues` works on plain-http pages too, unlike `randomUUID`). */
export function newNonce(): string {
  const bytes = new Uint8Array(9);
  globalThis.crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** A trip back to `back` (an address without a fragment), and the marked address to give the provider. */
export function newTrip(back: string): Trip & { url: string } {
  const nonce = newNonce();
  const url = new URL(back);
  url.searchParams.set(RETURN_PARAM, nonce);
  return { nonce, back, url: url.toString() };
}

/** The nonce the address carries, if it is the return of a trip a component started. */
export function returnedNonce(href: string = globalThis.location?.href ?? ''): string | null {
  try {
    return new URL(href).searchParams.get(RETURN_PARAM);
  } catch {
    return null;
  }
}

/** Whether the page's address is the return of this trip. */
export function isReturnOf(trip: Trip | null | undefined, href?: string): trip is Trip {
  return !!trip?.nonce && returnedNonce(href) === trip.nonce;
}

/**
 * The address of a return put back as it was when the trip started (`back`): without the marker, without what the
 * provider added, and with the host's own values of a parameter the provider uses too (its `token`), in place.
 * Parameters the page added meanwhile stay.
 */
export function restoredAddress(href: string, back: string): string {
  const now = new URL(href);
  const was = new URL(back);
  const keep = new Map(PROVIDER_RETURN_PARAMS.map((k) => [k, was.searchParams.getAll(k)]));
  const params = new URLSearchParams();
  for (const [k, v] of now.searchParams) {
    if (k === RETURN_PARAM) continue;
    const own = keep.get(k);
    if (!own) params.append(k, v);
    else if (own.length) params.append(k, own.shift()!); // the host's value (the provider may have written over it)
  }
  // A host value the provider's removed altogether (none today) comes back too.
  for (const [k, rest] of keep) for (const v of rest) params.append(k, v);
  const query = params.toString();
  now.search = query ? `?${query}` : '';
  return now.toString();
}

/** The trip kept under `key`, if it is one (sessionStorage may hold anything: another version's, a hand edit). */
export function keptTrip<T extends Trip>(key: string): T | null {
  try {
    const raw = globalThis.sessionStorage?.getItem(key);
    const t = raw ? (JSON.parse(raw) as T) : null;
    return t && typeof t.nonce === 'string' && typeof t.back === 'string' ? t : null;
  } catch {
    return null;
  }
}

/** Keeps a trip across the page's unload (one per kind and page session). */
export function keepTrip(key: string, trip: Trip): void {
  globalThis.sessionStorage?.setItem(key, JSON.stringify(trip));
}

/** Once the return is taken: the address is the page's own again (history entry replaced, nothing loaded). */
export function forgetReturn(trip: Trip): void {
  const href = globalThis.location?.href;
  if (!href || !isReturnOf(trip, href)) return;
  const clean = restoredAddress(href, trip.back);
  try {
    if (clean !== href) globalThis.history?.replaceState(globalThis.history.state, '', clean);
  } catch {
    // A page whose history refuses it (a sandboxed frame) keeps its address: the trip is dropped, so it is not taken
    // twice anyway.
  }
}
