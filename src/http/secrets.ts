import { timingSafeEqual } from 'node:crypto';

/**
 * Constant-time string comparison: the time depends on neither content nor where they differ. A length mismatch
 * does the same work (comparing `b` with itself) and answers false; the length of the expected secret is no
 * secret (every key of a kind has the same length). Hashing both sides first, as this did before, cost four
 * SHA-256 runs per request (the admin key and the app's key are both compared), about 4% of a hot request's CPU.
 */
export function safeEqual(a: string, b: string): boolean {
  const ba = Buffer.from(a);
  const bb = Buffer.from(b);
  if (ba.length !== bb.length) {
    timingSafeEqual(bb, bb);
    return false;
  }
  return timingSafeEqual(ba, bb);
}
