// The demo workspace's webhook receiver, built into the service (served by the console at
// /console/api/demo-receiver/...): the demo app's endpoints point at it, so its delivery log fills with real signed
// deliveries on a machine without internet. It is the one exception to the private-URL policy, and a narrow one: a
// loopback URL whose path carries a token only this service can mint (an HMAC of the app id keyed with the admin
// key). An app's own key cannot make such a URL, so real apps keep the policy as it is.
import { createHmac } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { Webhook } from 'standardwebhooks';
import { safeEqual } from '../http/secrets.js';
import { sql } from '../db/sql.js';

import type { DemoReceiver } from '../deps.js';
import { DEMO_RECEIVER_PATH } from '../console-api/urls.js';

export { DEMO_RECEIVER_PATH };

/** `ok` answers 200 to every verified delivery; `flaky` refuses the first attempt of each message with a 503. */
export type DemoReceiverMode = 'ok' | 'flaky';
const MODES: readonly DemoReceiverMode[] = ['ok', 'flaky'];

/** The capability in the receiver's path: only the holder of the admin key can make it. */
export function demoReceiverToken(adminKey: string, appId: string): string {
  return createHmac('sha256', adminKey).update(`offerkit demo receiver\u0000${appId}`).digest('base64url').slice(0, 32);
}

/** The receiver's URL for an app, on this service's loopback origin (`http://127.0.0.1:<port>`). */
export function demoReceiverUrl(origin: string, adminKey: string, appId: string, mode: DemoReceiverMode = 'ok') {
  const token = demoReceiverToken(adminKey, appId);
  return `${origin.replace(/\/+$/, '')}${DEMO_RECEIVER_PATH}/${encodeURIComponent(appId)}/${mode}/${token}`;
}

/** The parts of a receiver path, or null for any other path. */
export function parseDemoReceiverPath(
  pathname: string,
): { appId: string; mode: DemoReceiverMode; token: string } | null {
  const m = /^\/console\/api\/demo-receiver\/([^/]+)\/([^/]+)\/([A-Za-z0-9_-]+)$/.exec(pathname);
  if (!m || !MODES.includes(m[2] as DemoReceiverMode)) return null;
  let appId: string;
  try {
    appId = decodeURIComponent(m[1]);
  } catch {
    return null;
  }
  return { appId, mode: m[2] as DemoReceiverMode, token: m[3] };
}

/**
 * Whether `url` is the demo receiver minted for `appId`: plain http to a loopback address (any port: the service's
 * own), no credentials, query or fragment, and a path with this app's token.
 */
export function isDemoReceiverUrl(url: string, appId: string, adminKey: string): boolean {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  if (u.protocol !== 'http:' || u.username || u.password || u.search || u.hash) return false;
  const host = u.hostname.replace(/^\[(.*)\]$/, '$1');
  if (host !== '127.0.0.1' && host !== '::1') return false;
  const p = parseDemoReceiverPath(u.pathname);
  return !!p && p.appId === appId && safeEqual(p.token, demoReceiverToken(adminKey, appId));
}

/** Message ids whose first attempt the flaky receiver has refused (this process; bounded). */
const refusedOnce = new Set<string>();

export interface ReceiverAnswer {
  status: number;
  body: Record<string, unknown>;
}

/**
 * Answers one delivery as a careful receiver does: the signature must verify with the secret of one of the app's
 * endpoints that point here (401 otherwise, as the spec asks of receivers), and in `flaky` mode the first attempt
 * of each message is refused with a 503, so the log shows a retry that succeeds.
 */
export async function receiveDemoDelivery(
  em: EntityManager,
  adminKey: string,
  input: { pathname: string; headers: Record<string, string | string[] | undefined>; body: string },
): Promise<ReceiverAnswer> {
  const p = parseDemoReceiverPath(input.pathname);
  if (!p || !safeEqual(p.token, demoReceiverToken(adminKey, p.appId)))
    return { status: 404, body: { error: 'Not found' } };
  // Plain SQL, not the entity: this module is loaded on demand (src/dev/), and a second copy of an entity class
  // (tsx's CommonJS and ESM loaders each keep one) would be unknown to the ORM.
  const endpoints = (
    await sql<{ url: string; secret: string }>(em, 'select url, secret from webhook_endpoints where app_id = $1', [
      p.appId,
    ])
  ).filter((e) => isDemoReceiverUrl(e.url, p.appId, adminKey));
  const headers: Record<string, string> = {};
  for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
    const v = input.headers[name];
    if (typeof v === 'string') headers[name] = v;
  }
  let event: { type?: string } | null = null;
  for (const e of endpoints) {
    try {
      event = new Webhook(e.secret).verify(input.body, headers) as { type?: string };
      break;
    } catch {
      /* another endpoint's secret, or not signed */
    }
  }
  if (!event) return { status: 401, body: { error: 'Signature did not verify' } };
  const id = headers['webhook-id'];
  if (p.mode === 'flaky' && !refusedOnce.has(`${p.appId}:${id}`)) {
    if (refusedOnce.size >= 10_000) refusedOnce.delete(refusedOnce.values().next().value!);
    refusedOnce.add(`${p.appId}:${id}`);
    return { status: 503, body: { error: 'Busy: this demo receiver refuses the first attempt of each message' } };
  }
  return { status: 200, body: { received: id, type: event.type ?? null, signature: 'verified' } };
}

/** The receiver as the service takes it (`Deps.demoReceiver`), where the demo runs. */
export const demoReceiver = (adminKey: string): DemoReceiver => ({
  accepts: (url, appId) => isDemoReceiverUrl(url, appId, adminKey),
  receive: (em, request) => receiveDemoDelivery(em, adminKey, request),
});
