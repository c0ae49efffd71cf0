import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * Random bytes drawn from a pool filled 4 KiB at a time by the CSPRNG, each byte used once (as Node does for
 * `randomUUID`): one `randomBytes` call per id cost about 4% of a usage add's CPU, which makes two event ids.
 */
let pool = Buffer.alloc(0);
let used = 0;
function pooledRandomBytes(n: number): Buffer {
  if (used + n > pool.length) {
    pool = randomBytes(Math.max(4096, n));
    used = 0;
  }
  return pool.subarray(used, (used += n));
}

/** Random base62 string; rejection sampling keeps every character equally likely. */
export function randomToken(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of pooledRandomBytes(length * 2)) {
      if (byte < 248) out += ALPHABET[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

export const ID_PREFIXES = {
  app: 'app',
  secretKey: 'key',
  publicKey: 'pub',
  event: 'evt',
  delivery: 'whd',
  webhook: 'whk',
  cancelSession: 'cxl',
  checkout: 'chk',
  offer: 'ofr',
  outbox: 'obx',
  report: 'rpt',
  reservation: 'rsv',
  org: 'org',
  planChange: 'chg',
  creditGrant: 'grt',
  creditPackOrder: 'cpo',
} as const;

/** Prefixed random id: `app_...`, `key_...`. Keys get more entropy than record ids. */
export function newId(kind: keyof typeof ID_PREFIXES): string {
  const secret = kind === 'secretKey' || kind === 'publicKey';
  return `${ID_PREFIXES[kind]}_${randomToken(secret ? 32 : 20)}`;
}

/**
 * Caller-chosen ids (plans, entitlements, add-ons, incentives, offers, cancel flows):
 * lowercased, spaces turned into underscores, everything but a-z, 0-9 and `_` removed.
 * Account ids are never normalized.
 */
export function normalizeId(raw: string): string {
  return raw
    .toLowerCase()
    .replace(/ /g, '_')
    .replace(/[^a-z0-9_]/g, '');
}
