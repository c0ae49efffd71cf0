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

const BASE36 = '0123456789abcdefghijklmnopqrstuvwxyz';
let lastMs = 0;
let seq = 0;

/**
 * 20 characters that sort (as text, under any collation: digits and lowercase letters only in the ordered part) in
 * the order this process made them: 9 of milliseconds, 2 of a sequence within the millisecond, 9 random. Events
 * are listed by `created_at, id`, and the events of one transaction share a millisecond (or, written by SQL, the
 * transaction's `now()`): the id keeps them in the order they were said ("grace ended", then "cancelled"). A clock
 * that steps back keeps the last millisecond; more than 1,296 ids in one millisecond borrow the next one.
 */
export function timeOrderedToken(now = Date.now()): string {
  if (now > lastMs) {
    lastMs = now;
    seq = 0;
  } else if (++seq >= BASE36.length ** 2) {
    lastMs++;
    seq = 0;
  }
  return lastMs.toString(36).padStart(9, '0') + BASE36[Math.floor(seq / 36)] + BASE36[seq % 36] + randomToken(9);
}

/**
 * Prefixed random id: `app_...`, `key_...`. Keys get more entropy than record ids. Event ids are time-ordered
 * (see `timeOrderedToken`), same length and alphabet.
 */
export function newId(kind: keyof typeof ID_PREFIXES): string {
  if (kind === 'event') return `evt_${timeOrderedToken()}`;
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
