import Router from '@koa/router';
import { bodyParser } from '@koa/bodyparser';
import type { Context, Middleware } from 'koa';
import type { Deps } from '../deps.js';
import { lazyFork } from '../db/lazy-em.js';
import { authenticate, bearer } from './auth.js';
import { AppError, badRequest } from './errors.js';
import { idempotencyKeyOf, withIdempotency } from './idempotency.js';
import { Reply, type RouteDef, type Scope } from './route.js';
import { illFormedMessage, jsonDepthExceeds, MAX_JSON_DEPTH, parseInput, strictBody } from './validate.js';

const HAS_BODY = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * The origin links are built on: PUBLIC_API_URL, else the request's own scheme and Host (Koa reads
 * `X-Forwarded-Proto`/`X-Forwarded-Host` only behind a declared proxy, TRUST_PROXY).
 */
export function requestOrigin(ctx: Context, deps: Deps): string {
  if (deps.config.PUBLIC_API_URL) return new URL(deps.config.PUBLIC_API_URL).origin;
  return `${ctx.protocol}://${ctx.host}`;
}

function jsonBody(limit: string, form = false): Middleware {
  const parse = bodyParser({
    enableTypes: form ? ['json', 'form'] : ['json'],
    formLimit: limit,
    jsonLimit: limit,
    encoding: 'utf-8',
    extendTypes: { json: ['application/json', 'application/*+json'] },
    onError: (err: Error & { status?: number; type?: string }) => {
      if (err.status === 413 || err.type === 'entity.too.large')
        throw new AppError(413, `Request body too large (limit ${limit})`);
      if (err.status === 415 || err.type === 'encoding.unsupported')
        throw new AppError(415, 'Unsupported body encoding');
      throw new AppError(400, 'Invalid JSON body');
    },
  });
  return async (ctx, next) => {
    const length = Number(ctx.get('Content-Length') || 0);
    const chunked = ctx.get('Transfer-Encoding') !== '';
    if (
      (length > 0 || chunked) &&
      !ctx.is('application/json', 'application/*+json') &&
      !(form && ctx.is('application/x-www-form-urlencoded'))
    ) {
      throw new AppError(
        415,
        form
          ? 'Content-Type must be application/json or application/x-www-form-urlencoded'
          : 'Content-Type must be application/json',
      );
    }
    await parse(ctx, async () => {
      // Bounded nesting, checked on the text before anything walks the parsed value.
      const raw = (ctx.request as { rawBody?: string }).rawBody;
      if (typeof raw === 'string' && ctx.is('application/json', 'application/*+json') && jsonDepthExceeds(raw))
        throw form
          ? new AppError(400, 'invalid_request', {
              error_description: `body: JSON nested deeper than ${MAX_JSON_DEPTH} levels`,
            })
          : badRequest(`body: JSON nested deeper than ${MAX_JSON_DEPTH} levels`);
      // Text that is not valid Unicode (a lone surrogate), in any string or key: every body, MCP arguments included.
      const illFormed = illFormedMessage(ctx.request.body, raw);
      if (illFormed)
        throw form ? new AppError(400, 'invalid_request', { error_description: illFormed }) : badRequest(illFormed);
      await next();
    });
  };
}

/** A path parameter that cannot name anything: checked before credentials, so no query ever carries it. */
function checkPathParams(params: Record<string, string>) {
  for (const [name, value] of Object.entries(params)) {
    if (typeof value === 'string' && value.includes('\u0000'))
      throw badRequest(`${name}: must not contain a NUL character`);
  }
}

/** Runs one route for a caller: authenticate, validate, call the handler. Shared by HTTP and MCP. */
export async function runRoute(
  def: RouteDef,
  input: {
    params: Record<string, string>;
    query: unknown;
    body: unknown;
    credential: string | null;
    requestId: string;
    origin: string;
    headers?: Record<string, string | undefined>;
    rawBody?: string;
    /** The route table `def` is served from. */
    routes: readonly RouteDef[];
  },
  deps: Deps,
): Promise<Reply> {
  checkPathParams(input.params);
  const em = lazyFork(deps.orm.em);
  const { caller, app } = await authenticate(def, input.params, input.credential, em, deps).catch((err: unknown) => {
    if (def.challenge && err instanceof AppError && err.status === 401)
      throw new AppError(401, err.message, err.extra, {
        'WWW-Authenticate': def.challenge(input.origin, input.params, input.credential !== null),
      });
    throw err;
  });
  let parsed: { params: unknown; query: unknown; body: unknown };
  try {
    parsed = {
      params: def.params ? parseInput(def.params, input.params, 'path') : input.params,
      query: def.query ? parseInput(def.query, input.query ?? {}, 'query') : {},
      // OAuth bodies keep unknown parameters ignored, as RFC 6749 and RFC 7591 require.
      body: def.body ? parseInput(def.oauth ? def.body : strictBody(def.body), input.body ?? {}, 'body') : {},
    };
  } catch (err) {
    if (def.invalidInput && err instanceof AppError) return def.invalidInput(err.message);
    if (def.oauth && err instanceof AppError)
      throw new AppError(400, typeof def.oauth === 'object' ? def.oauth.invalidInput : 'invalid_request', {
        error_description: err.message,
      });
    throw err;
  }
  const scope: Scope<unknown, unknown, unknown> = {
    em,
    deps,
    caller,
    app,
    ...parsed,
    requestId: input.requestId,
    origin: input.origin,
    headers: input.headers ?? {},
    rawBody: input.rawBody,
    routes: input.routes,
  };
  const key = idempotencyKeyOf(def, { ...parsed, caller, appId: app?.id ?? null }, scope.headers);
  scope.idempotency = key;
  return withIdempotency(em, def, key, async () => {
    const result = await def.handler(scope as never);
    if (result instanceof Reply) return result;
    if (result === undefined) return new Reply(204, null);
    return new Reply(def.status ?? 200, result);
  });
}

/**
 * The bucket of a path or a route pattern: its third segment under `/apps/:appId/...`, else its first; lower case
 * and without a trailing slash, as the router matches paths.
 */
export function routeBucket(path: string): string {
  const segments = (path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path).toLowerCase().split('/');
  return segments[1] === 'apps' && segments.length > 3 ? `/apps/*/${segments[3]}` : `/${segments[1] ?? ''}`;
}

/**
 * Builds the Koa router middleware from the route table: the one place routes, credentials and schemas are
 * declared. `@koa/router` tries every route of a router in turn (about 20 µs per request over 174 routes), so the
 * routes are also registered in one router per bucket (`routeBucket`; the largest has 28 routes) and a request is
 * matched against its bucket's. No two buckets' routes can match the same path (their static segments differ); a
 * request its bucket does not match (a 404, or a path spelt in a way the bucket does not foresee) is matched
 * against the whole table, exactly as before.
 */
export function buildRouter(routes: readonly RouteDef[], deps: Deps): Middleware {
  const entries: RouterEntry[] = [];
  const seen = new Set<string>();
  for (const def of routes) {
    const key = `${def.method} ${def.path}`;
    if (seen.has(key)) throw new Error(`route declared twice: ${key}`);
    seen.add(key);
    const chain: Middleware[] = [
      (ctx, next) => {
        ctx.state.route = def;
        return next();
      },
    ];
    if (HAS_BODY.has(def.method))
      chain.push(jsonBody(def.bodyLimit ?? '1mb', def.oauth !== undefined && def.oauth !== false));
    chain.push(async (ctx) => {
      if (ctx.request.body !== undefined && ctx.request.body !== null && typeof ctx.request.body !== 'object') {
        throw badRequest('body: must be a JSON object');
      }
      const reply = await runRoute(
        def,
        {
          params: ctx.params as Record<string, string>,
          query: ctx.query,
          body: ctx.request.body,
          credential: bearer(ctx),
          requestId: ctx.state.requestId as string,
          origin: requestOrigin(ctx, deps),
          headers: ctx.headers as Record<string, string | undefined>,
          rawBody: (ctx.request as { rawBody?: string }).rawBody,
          routes,
        },
        deps,
      );
      ctx.status = reply.status;
      for (const [k, v] of Object.entries(reply.headers)) ctx.set(k, v);
      if (reply.contentType) ctx.type = reply.contentType;
      // A null body leaves the status as set (Koa would turn `body = null` into 204, e.g. for an MCP 202 or a
      // redirect).
      if (reply.status !== 204 && reply.body !== null) ctx.body = reply.body;
    });
    entries.push({ method: def.method, path: def.path, chain });
  }
  return bucketedRouter(entries);
}

export interface RouterEntry {
  method: string;
  path: string;
  chain: Middleware[];
}

/** `@koa/router` over `entries`, in order, matched within the request's bucket first (see `buildRouter`). */
export function bucketedRouter(entries: readonly RouterEntry[]): Middleware {
  const router = new Router();
  const buckets = new Map<string, Router>();
  for (const { method, path, chain } of entries) {
    router.register(path, [method], chain);
    const bucket = routeBucket(path);
    if (!buckets.has(bucket)) buckets.set(bucket, new Router());
    buckets.get(bucket)!.register(path, [method], chain);
  }
  // The router's own context type adds `params`, which it sets itself.
  const dispatch = (r: Router) => r.routes() as unknown as Middleware;
  const everything = dispatch(router);
  const byBucket = new Map([...buckets].map(([bucket, r]) => [bucket, dispatch(r)]));
  return (ctx, next) => {
    const bucket = byBucket.get(routeBucket(ctx.path));
    if (!bucket) return everything(ctx, next);
    // Matched by path (a route of another method included): on to `otherMethods` as before; else the whole table.
    return bucket(ctx, () => ((ctx as { matched?: unknown[] }).matched?.length ? next() : everything(ctx, next)));
  };
}

/**
 * After the router: a path the table has, asked with a method it does not have (TRACE included), is 405 with
 * `Allow` listing the methods it has (OPTIONS outside a CORS preflight answers 204 with `Allow`). Paths the table
 * does not have stay 404.
 */
export function otherMethods(): Middleware {
  return async (ctx, next) => {
    const layers = (ctx as { matched?: { methods: string[] }[] }).matched ?? [];
    const allowed = [...new Set(layers.flatMap((l) => l.methods))];
    if (allowed.length === 0) return next();
    const allow = allowed.join(', ');
    if (ctx.method === 'OPTIONS') {
      ctx.set('Allow', allow);
      ctx.status = 204;
      return;
    }
    throw new AppError(405, `Method ${ctx.method} is not allowed on ${ctx.path} (allowed: ${allow})`, undefined, {
      Allow: allow,
    });
  };
}
