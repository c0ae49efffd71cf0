/**
 * Polls `fn` until it returns something other than undefined or false (a throw counts as "not
 * yet"), or fails after `ms`.
 */
export async function eventually<T>(fn: () => Promise<T | undefined | false>, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined && v !== false) return v as T;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
