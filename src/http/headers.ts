// Security headers on every answer: what a browser may do with it (sniff a type, send a referrer, frame a page, run
// a script). The API's JSON is read by programs, the console, the consent pages, /docs and the components' example
// page by browsers; one middleware covers them all, errors and 404s included.
import { createHash } from 'node:crypto';
import type { Middleware } from 'koa';

/**
 * The browsers' own default, stated so it holds everywhere: a full referrer to this service's own pages, only the
 * origin to other sites (a console URL with a setup token, a consent URL with a request id, never leaves in full),
 * and nothing from https to http.
 */
export const REFERRER_POLICY = 'strict-origin-when-cross-origin';

/** `'sha256-...'`: a CSP source allowing exactly this inline script (its text between the tags). */
export const scriptHash = (text: string) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

/**
 * The Content-Security-Policy of an HTML page that loads its scripts, styles and data from this service: the console
 * (Vite's build has no inline script), /docs (Swagger UI; its one inline script allowed by hash) and the components'
 * example page. Styles may be inline: Mantine and the components' shadow roots write style elements and attributes
 * at run time (a hash cannot follow them), and a style cannot run code. Images from `data:` URLs (the console's empty
 * favicon, Swagger UI's icons). Requests go to this origin, and to `connectTo` (the origins /docs sends its "Try it
 * out" requests to). Nothing may frame the page.
 */
export function htmlCsp(options: { inlineScripts?: readonly string[]; connectTo?: readonly string[] } = {}): string {
  const scripts = ["'self'", ...(options.inlineScripts ?? []).map(scriptHash)];
  const connect = ["'self'", ...(options.connectTo ?? [])];
  return [
    "default-src 'self'",
    `script-src ${scripts.join(' ')}`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    `connect-src ${[...new Set(connect)].join(' ')}`,
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/**
 * The Content-Security-Policy of a page that loads nothing at all (the service's consent pages, its error and "too
 * many attempts" pages): no script of any kind, only its own style element, forms posting here (and, on the consent
 * page, on to the client's redirect URI: `formTargets`).
 */
export function staticPageCsp(formTargets: readonly string[] = []): string {
  return [
    "default-src 'none'",
    "style-src 'unsafe-inline'",
    `form-action ${["'self'", ...formTargets].join(' ')}`,
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

const DEFAULT_HTML_CSP = htmlCsp();

/**
 * `X-Content-Type-Options: nosniff` and `Referrer-Policy` on every answer, set before anything runs (so an error, a
 * 404, a throttled request and Better Auth's own answers carry them); then, on an HTML answer, `X-Frame-Options:
 * DENY` (for browsers without `frame-ancestors`) and, unless the page set its own, the default HTML policy.
 */
export function securityHeaders(): Middleware {
  return async (ctx, next) => {
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', REFERRER_POLICY);
    await next();
    if (ctx.respond === false || !String(ctx.response.get('Content-Type')).startsWith('text/html')) return;
    ctx.set('X-Frame-Options', 'DENY');
    if (!ctx.response.get('Content-Security-Policy')) ctx.set('Content-Security-Policy', DEFAULT_HTML_CSP);
  };
}
