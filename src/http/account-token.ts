import { createHmac, timingSafeEqual } from 'node:crypto';

export const ACCOUNT_TOKEN_PREFIX = 'act_';

interface Payload {
  /** app id */ a: string;
  /** account id */ n: string;
  /** expiry, Unix seconds */ e: number;
}

function sign(payload: string, secretKey: string): string {
  return createHmac('sha256', secretKey).update(payload).digest('base64url');
}

/** `act_<payload>.<signature>`: payload holds app, account and expiry; HMAC-SHA256 with the app's secret key. */
export function mintAccountToken(appId: string, accountId: string, secretKey: string, expiresAt: Date): string {
  const payload = Buffer.from(
    JSON.stringify({ a: appId, n: accountId, e: Math.floor(expiresAt.getTime() / 1000) } satisfies Payload),
  ).toString('base64url');
  return `${ACCOUNT_TOKEN_PREFIX}${payload}.${sign(payload, secretKey)}`;
}

/**
 * Checks the signature (constant time) against the app's current secret key, the app id and the expiry.
 * Regenerating the secret key therefore invalidates every token at once.
 */
export function verifyAccountToken(
  token: string,
  appId: string,
  secretKey: string,
  now = new Date(),
): { accountId: string; expiresAt: Date } | null {
  if (!token.startsWith(ACCOUNT_TOKEN_PREFIX)) return null;
  const body = token.slice(ACCOUNT_TOKEN_PREFIX.length);
  const dot = body.indexOf('.');
  if (dot <= 0) return null;
  const payload = body.slice(0, dot);
  const given = Buffer.from(body.slice(dot + 1), 'base64url');
  const expected = Buffer.from(sign(payload, secretKey), 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  let data: Payload;
  try {
    data = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Payload;
  } catch {
    return null;
  }
  if (data.a !== appId || typeof data.n !== 'string' || typeof data.e !== 'number') return null;
  if (data.e * 1000 <= now.getTime()) return null;
  return { accountId: data.n, expiresAt: new Date(data.e * 1000) };
}
