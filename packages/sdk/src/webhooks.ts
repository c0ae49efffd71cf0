import { WebhookVerificationError } from './errors.js';
import type { WebhookEvent } from './generated/api.js';

/** Request headers as Node (`req.headers`), the Fetch API (`request.headers`) or a plain object give them. */
export type HeadersLike = Headers | Record<string, string | string[] | undefined>;

export interface VerifyOptions {
  /** Seconds a delivery's `webhook-timestamp` may differ from now (default 300, as the reference verifier). */
  tolerance?: number;
  /** The time to check the timestamp against (default: now). */
  now?: Date;
}

const encoder = new TextEncoder();

/**
 * Verifies a webhook delivery with the Standard Webhooks scheme and returns its event, typed by `type`:
 * HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<raw body>` keyed with the base64 part of the `whsec_` secret,
 * compared (in constant time) with each `v1,<signature>` of `webhook-signature`, and a timestamp within the
 * tolerance. Pass the body exactly as received (a string or bytes), never a re-serialized object. Throws
 * WebhookVerificationError when anything does not match.
 */
export async function verifyWebhook(
  payload: string | Uint8Array | ArrayBuffer,
  headers: HeadersLike,
  secret: string,
  options: VerifyOptions = {},
): Promise<WebhookEvent> {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures) throw new WebhookVerificationError('Missing webhook headers');
  const sentAt = Number(timestamp);
  if (!/^\d+$/.test(timestamp) || !Number.isSafeInteger(sentAt))
    throw new WebhookVerificationError('Invalid webhook-timestamp');
  const now = Math.floor((options.now ?? new Date()).getTime() / 1000);
  const tolerance = options.tolerance ?? 300;
  if (sentAt < now - tolerance) throw new WebhookVerificationError('Message timestamp too old');
  if (sentAt > now + tolerance) throw new WebhookVerificationError('Message timestamp too new');

  const body = typeof payload === 'string' ? encoder.encode(payload) : new Uint8Array(payload);
  const key = await hmacKey(secret);
  const signed = concat(encoder.encode(`${id}.${timestamp}.`), body);
  const subtle = await subtleCrypto();
  let verified = false;
  for (const entry of signatures.split(' ')) {
    const [version, sig] = entry.split(',', 2);
    if (version !== 'v1' || !sig) continue;
    let given: Uint8Array;
    try {
      given = fromBase64(sig);
    } catch {
      continue;
    }
    if (await subtle.verify('HMAC', key, given as BufferSource, signed as BufferSource)) {
      verified = true;
      break;
    }
  }
  if (!verified) throw new WebhookVerificationError('No matching signature found');
  const text = typeof payload === 'string' ? payload : new TextDecoder().decode(body);
  try {
    return JSON.parse(text) as WebhookEvent;
  } catch {
    throw new WebhookVerificationError('The body is not JSON');
  }
}

/**
 * Signs a payload as the service does (for tests of your own webhook handler): returns the three headers to send.
 */
export async function signWebhook(
  payload: string,
  secret: string,
  opts: { id: string; timestamp?: Date },
): Promise<Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string>> {
  const timestamp = String(Math.floor((opts.timestamp ?? new Date()).getTime() / 1000));
  const subtle = await subtleCrypto();
  const sig = await subtle.sign(
    'HMAC',
    await hmacKey(secret),
    encoder.encode(`${opts.id}.${timestamp}.${payload}`) as BufferSource,
  );
  return { 'webhook-id': opts.id, 'webhook-timestamp': timestamp, 'webhook-signature': `v1,${toBase64(sig)}` };
}

async function hmacKey(secret: string): Promise<CryptoKey> {
  if (!secret) throw new WebhookVerificationError('The webhook secret is empty');
  let raw: Uint8Array;
  try {
    raw = fromBase64(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret);
  } catch {
    throw new WebhookVerificationError('The webhook secret is not whsec_<base64>');
  }
  const subtle = await subtleCrypto();
  return subtle.importKey('raw', raw as BufferSource, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);
}

let subtlePromise: Promise<SubtleCrypto> | undefined;

/** Web Crypto: global in browsers, Deno, workers and Node 19+; `node:crypto`'s `webcrypto` on Node 18. */
function subtleCrypto(): Promise<SubtleCrypto> {
  return (subtlePromise ??= (async () => {
    if (globalThis.crypto?.subtle) return globalThis.crypto.subtle;
    const name = 'node:crypto';
    const mod = (await import(/* @vite-ignore */ /* webpackIgnore: true */ name)) as { webcrypto: Crypto };
    return mod.webcrypto.subtle;
  })());
}

function header(headers: HeadersLike, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const rec = headers as Record<string, string | string[] | undefined>;
  const key = Object.keys(rec).find((k) => k.toLowerCase() === name);
  const v = key === undefined ? undefined : rec[key];
  return Array.isArray(v) ? v.join(' ') : v;
}

function fromBase64(s: string): Uint8Array {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function toBase64(buf: ArrayBuffer): string {
  const bytes = new Uint8Array(buf);
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin);
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}
