import { createHmac, randomBytes } from 'node:crypto';
import type { Context } from 'koa';
import type { Deps } from '../deps.js';
import { safeEqual } from '../http/secrets.js';
import { keyHash } from './rate-limits.js';

/**
 * Sign-in device cookies (OWASP's "device cookies" against online guessing): a browser that has signed in to an
 * account gets an HTTP-only cookie naming that account, signed by the service. Its later sign-ins to that account
 * are counted on that cookie alone, so failures from anyone else (the same address behind a NAT or a proxy without
 * TRUST_PROXY, or guesses at the same email from anywhere) never refuse them. A browser without one cannot be told
 * from a guesser, so its attempts are counted per address and per email (src/security/throttle.ts).
 */

/** How long a browser stays known to an account without signing in again. */
export const DEVICE_MAX_AGE_S = 180 * 24 * 3600;

export const normalEmail = (email: string) => email.trim().toLowerCase();

/** One cookie per account the browser signed in to, named after the account (hashed: the name holds no email). */
const cookieName = (email: string) => `offerkit.device_${keyHash(`device:${email}`).slice(0, 16)}`;

function secretOf(deps: Deps): Buffer {
  // The console's session secret, or (unset) one derived from the admin key: rotating it forgets every browser.
  return createHmac('sha256', deps.config.CONSOLE_AUTH_SECRET ?? deps.adminKey)
    .update('offerkit-sign-in-device')
    .digest();
}

const mac = (deps: Deps, email: string, id: string, issued: number) =>
  createHmac('sha256', secretOf(deps)).update(`${email}\n${id}\n${issued}`).digest('base64url');

/** The id of the valid device cookie this request carries for `email`, or null. */
export function deviceOf(ctx: Context, deps: Deps, email: string): string | null {
  const value = ctx.cookies.get(cookieName(email));
  const parts = value?.split('.') ?? [];
  if (parts.length !== 3) return null;
  const [id, issuedText, given] = parts;
  const issued = Number(issuedText);
  if (!/^[\w-]{16}$/.test(id) || !Number.isSafeInteger(issued)) return null;
  if (issued + DEVICE_MAX_AGE_S < Date.now() / 1000) return null;
  return safeEqual(given, mac(deps, email, id, issued)) ? id : null;
}

/** Adds the device cookie for `email` to a successful sign-in's answer (the same id again when it had one). */
export function rememberDevice(ctx: Context, deps: Deps, email: string, id: string | null, path: string) {
  const deviceId = id ?? randomBytes(12).toString('base64url');
  const issued = Math.floor(Date.now() / 1000);
  const secure = ctx.protocol === 'https' ? '; Secure' : '';
  // Sent back only to the sign-in route itself; never readable by a script.
  ctx.append(
    'Set-Cookie',
    `${cookieName(email)}=${deviceId}.${issued}.${mac(deps, email, deviceId, issued)}; Path=${path}; ` +
      `Max-Age=${DEVICE_MAX_AGE_S}; HttpOnly; SameSite=Strict${secure}`,
  );
}
