import type { Context, Middleware } from 'koa';
import type { Config } from '../config.js';
import { AppError } from '../errors.js';
import { INVALID_JSON_BODY, matchOf } from '../http/router.js';

/** Whether the router matched the MCP endpoint itself (a route declaring `transport: 'mcp'`), whatever the method. */
export const isMcpTransport = (ctx: Context) => matchOf(ctx)?.transport === 'mcp';

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

const hostnameOf = (host: string): string | null => {
  try {
    return new URL(`http://${host}`).hostname.toLowerCase();
  } catch {
    return null;
  }
};

/** Bound to a loopback address only (as `HOST=127.0.0.1` for local use). */
export const boundToLoopback = (c: Config) => LOOPBACK.has(c.HOST.trim().toLowerCase()) || /^127\./.test(c.HOST);

/**
 * The Host names the MCP endpoint answers to, or null when any Host is accepted. Checked when the API is
 * bound to a loopback address (DNS rebinding: a page on evil.example that resolves to 127.0.0.1 sends
 * `Host: evil.example`) or when MCP_ALLOWED_HOSTS is set.
 */
let lastHosts: { key: string; hosts: Set<string> | null } | null = null;

/** `allowedHosts`, worked out again only when the settings it reads change (it is read on every MCP request). */
function cachedAllowedHosts(c: Config): Set<string> | null {
  const key = `${c.HOST}\n${c.PUBLIC_API_URL ?? ''}\n${c.MCP_ALLOWED_HOSTS.join('\n')}`;
  if (lastHosts?.key !== key) lastHosts = { key, hosts: allowedHosts(c) };
  return lastHosts.hosts;
}

function allowedHosts(c: Config): Set<string> | null {
  if (!boundToLoopback(c) && c.MCP_ALLOWED_HOSTS.length === 0) return null;
  const hosts = new Set<string>(c.MCP_ALLOWED_HOSTS.map((h) => hostnameOf(h) ?? h));
  if (boundToLoopback(c)) for (const h of LOOPBACK) hosts.add(h);
  if (c.PUBLIC_API_URL) hosts.add(new URL(c.PUBLIC_API_URL).hostname.toLowerCase());
  return hosts;
}

/**
 * Whether a browser page of `origin` may call the MCP endpoint: the public origin (PUBLIC_API_URL),
 * MCP_ALLOWED_ORIGINS, and, when bound to a loopback address, pages on a loopback host. Every other
 * origin is refused, whatever Host the request names.
 */
export function mcpOriginAllowed(c: Config, origin: string): boolean {
  if (!URL.canParse(origin)) return false;
  const o = new URL(origin);
  if (c.PUBLIC_API_URL && new URL(c.PUBLIC_API_URL).origin === o.origin) return true;
  if (c.MCP_ALLOWED_ORIGINS.some((a) => new URL(a).origin === o.origin)) return true;
  return boundToLoopback(c) && LOOPBACK.has(o.hostname.toLowerCase());
}

/**
 * The MCP transport's security rules on the route that declares `transport: 'mcp'` (read from the router's match,
 * never the path's spelling), before credentials are looked at: a Host
 * or Origin that is not allowed is 403 (DNS rebinding), and a POST whose `Accept` rules out JSON is
 * 406 (the endpoint only answers JSON). CORS on this path then only ever reflects an allowed origin.
 */
export function mcpTransportGuard(config: () => Config): Middleware {
  return async (ctx: Context, next) => {
    if (!isMcpTransport(ctx)) return next();
    const c = config();
    const hosts = cachedAllowedHosts(c);
    if (hosts) {
      const name = hostnameOf(ctx.host);
      if (!name || !hosts.has(name))
        throw new AppError(403, `Host not allowed: ${ctx.host || '(none)'} is not a name this MCP server answers to`);
    }
    const origin = ctx.get('Origin');
    if (origin && !mcpOriginAllowed(c, origin))
      throw new AppError(403, `Origin not allowed: ${origin} may not call this MCP server`);
    if (ctx.method === 'POST' && ctx.get('Accept') && !ctx.accepts('application/json'))
      throw new AppError(406, 'Not Acceptable: the client must accept application/json');
    await next();
  };
}

/** JSON-RPC error codes the MCP endpoint answers with (JSON-RPC 2.0; -32000 is its server-error range). */
export const JSONRPC = { parseError: -32700, invalidRequest: -32600, internalError: -32603, serverError: -32000 };

const isErrorBody = (body: unknown): body is { error: string } & Record<string, unknown> =>
  !!body && typeof body === 'object' && typeof (body as { error?: unknown }).error === 'string';

/**
 * Every refusal of the MCP endpoint (`POST` on the route declaring `transport: 'mcp'`) as a JSON-RPC error, which is
 * what an MCP client reads: a body that is not JSON is -32700 (Parse error), one that is not a message the server
 * takes -32600 (Invalid Request), the transport's and the app's refusals (403 while the server is off, 404, 406,
 * 413, 415, 503) -32000 with the route's message and its other fields under `data`, a fault -32603. The status stays
 * the one the spec names (403 while the server is off). A 401 keeps `{ error: "Unauthorized" }` and its
 * `WWW-Authenticate` (the spec's Authentication section; clients act on the header). Answers already in JSON-RPC
 * (the transport's own refusals, a throttled request's) are left as they are. Runs outside the error handler, so it
 * sees the answer every refusal ends as.
 */
export function mcpJsonRpcErrors(): Middleware {
  return async (ctx: Context, next) => {
    await next();
    if (ctx.method !== 'POST' || !isMcpTransport(ctx) || ctx.status < 400 || ctx.status === 401) return;
    const body = ctx.body;
    if (!isErrorBody(body)) return;
    const { error, ...data } = body;
    const code =
      ctx.status === 400
        ? error === INVALID_JSON_BODY
          ? JSONRPC.parseError
          : JSONRPC.invalidRequest
        : ctx.status >= 500 && ctx.status !== 503
          ? JSONRPC.internalError
          : JSONRPC.serverError;
    const sent = (ctx.request as { body?: unknown }).body;
    const id = code === JSONRPC.parseError || !sent || typeof sent !== 'object' ? null : (sent as { id?: unknown }).id;
    ctx.body = {
      jsonrpc: '2.0',
      id: typeof id === 'string' || typeof id === 'number' ? id : null,
      error: {
        code,
        message: code === JSONRPC.parseError ? `Parse error: ${error}` : error,
        ...(Object.keys(data).length ? { data } : {}),
      },
    };
  };
}
