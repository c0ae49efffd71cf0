import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Deps } from '../deps.js';
import type { IApp } from '../apps/apps.entities.js';
import { lazyFork } from '../db/lazy-em.js';
import { hasCommitted } from '../db/transaction.js';
import { isDatabaseUnavailable, markOutcomeUnknown } from '../db/unavailable.js';
import { authenticate, bearer, type Identity } from './credentials.js';
import { AppError, badRequest, UnrecognizedCredential } from '../errors.js';
import { guard, redactSecrets, writes } from './guard.js';
import { idempotencyKeyOf, withIdempotency } from './idempotency.js';
import { Reply, type RouteDef, type Scope } from './route.js';
import { answerPage, requestBody } from './body.js';
import { decodeComponent, parseInput, strictBody } from './validate.js';

const HAS_BODY = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * The origin links are built on: PUBLIC_API_URL, else the request's own scheme and Host (Koa reads
 * `X-Forwarded-Proto`/`X-Forwarded-Host` only behind a declared proxy, TRUST_PROXY).
 */
export function requestOrigin(ctx: Context, deps: Deps): string {
  if (deps.config.PUBLIC_API_URL) return new URL(deps.config.PUBLIC_API_URL).origin;
  return `${ctx.protocol}://${ctx.host}`;
}

// Where src/security/mcp-guard.ts reads it (the MCP endpoint answers it as JSON-RPC's parse error, -32700).
export { INVALID_JSON_BODY } from './body.js';

/**
 * The URL's text: a path parameter or a query field whose percent-escapes are not UTF-8 (`%FF`, or `%ED%A0%80`, a
 * surrogate) is a 400 naming it. Koa's query parser would turn it into U+FFFD and the router keeps it undecoded, so
 * two different byte strings could name one record or be stored as one value.
 */
function urlTextProblem(ctx: Context): string | null {
  const malformed = matchOf(ctx)?.malformed;
  if (malformed) return `${malformed}: must be percent-encoded UTF-8 text`;
  const query = ctx.querystring;
  if (query.includes('%'))
    for (const part of query.split('&')) {
      const eq = part.indexOf('=');
      const [name, value] = eq < 0 ? [part, ''] : [part.slice(0, eq), part.slice(eq + 1)];
      const decodedName = decodeComponent(name.replaceAll('+', ' '));
      if (decodedName === null) return `${name}: the query field's name is not percent-encoded UTF-8`;
      if (decodeComponent(value.replaceAll('+', ' ')) === null)
        return `${decodedName}: must be percent-encoded UTF-8 text`;
    }
  return null;
}

/** The URL check of a route: a 400 (the route's own page where it answers invalid input with one). */
const checkUrlText =
  (page: RouteDef['invalidInput']): Middleware =>
  (ctx, next) => {
    const problem = urlTextProblem(ctx);
    if (!problem) return next();
    if (page) return answerPage(ctx, page(problem));
    throw badRequest(problem);
  };

/** A path parameter that cannot name anything: checked before credentials, so no query ever carries it. */
function checkPathParams(params: Record<string, string>) {
  for (const [name, value] of Object.entries(params)) {
    if (typeof value === 'string' && value.includes('\u0000'))
      throw badRequest(`${name}: must not contain a NUL character`);
  }
}

/** Runs one route for a caller: authenticate, guard, validate, call the handler. Shared by HTTP and MCP. */
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
    /** The client's address (Koa's `ctx.ip`: forwarded headers only under TRUST_PROXY). */
    ip?: string;
    /** `console`: the route is served to a signed-in person (their session, roles), not to a key. */
    surface?: Surface;
    /** Who a session cookie belongs to, and their role in an app's workspace (the console's surface). */
    identity?: Identity;
    /** Counts credentials that matched nothing, and admits recognized callers (src/security/admission.ts). */
    admission?: RouteAdmission;
    /** The entity manager to run in (an MCP dry run's rolled-back transaction); else a fresh fork. */
    em?: EntityManager;
    /**
     * The app whose secret key `credential` is, already authenticated by the request this one runs inside (an MCP
     * tool call): the key is not checked again on a route of that app that takes it.
     */
    secretOf?: IApp;
    /**
     * Run in place of the route's handler, after its authentication, guards and validation (an MCP dry run of a call
     * that reaches outside: the route's own checks, then a description instead of the call).
     */
    handler?: (scope: Scope<Record<string, string>, unknown, unknown>) => Promise<Reply>;
  },
  deps: Deps,
): Promise<Reply> {
  checkPathParams(input.params);
  const em = input.em ?? lazyFork(deps.orm.em);
  const headers = input.headers ?? {};
  const known =
    input.secretOf !== undefined &&
    input.surface === undefined &&
    def.auth.includes('S') &&
    !def.auth.includes('C') &&
    input.params.appId === input.secretOf.id &&
    input.credential === input.secretOf.apiKey;
  const { caller, app } = known
    ? { caller: { kind: 'secret' as const }, app: input.secretOf! }
    : await authenticate(def, input.params, input.credential, em, deps, {
        surface: input.surface ?? 'api',
        headers,
        origin: input.origin,
        identity: input.identity,
      }).catch(async (err: unknown) => {
        // A guess is counted (and past the limit answered 429); a valid credential never reaches this.
        if (err instanceof UnrecognizedCredential && input.admission && input.credential !== null)
          await input.admission.unrecognized(input.ip ?? '', input.credential);
        if (def.challenge && err instanceof AppError && err.status === 401)
          throw new AppError(401, err.message, err.extra, {
            'WWW-Authenticate': await def.challenge(input.origin, input.params, input.credential !== null, {
              em,
              routes: input.routes,
            }),
          });
        throw err;
      });
  // Tenancy is settled by authenticate (the app is the credential's, or in the person's workspace); the read-only
  // app and people's roles here, on the route's declared facts, before any input is looked at.
  await guard(def, { caller, app, em, deps, params: input.params });
  let rate: Record<string, string>;
  try {
    // A write the read-only app allowed its readers anyway (the guard let it through): bounded per caller, as nobody
    // owns it. Open routes (the provider's notifications) are nobody's reading, and are throttled on their own.
    if (input.admission && app?.readOnly && writes(def) && caller.kind !== 'admin' && !def.auth.includes('N'))
      await input.admission.readOnlyWrite(caller, app, input.ip ?? '');
    rate = input.admission ? await input.admission.admit(caller, app, input.ip ?? '') : {};
  } catch (err) {
    // The MCP endpoint answers in JSON-RPC, throttled too: an error per request with the retry time.
    if (def.transport === 'mcp' && err instanceof AppError && err.status === 429)
      return jsonRpcThrottled(err, input.body);
    throw err;
  }
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
    headers,
    rawBody: input.rawBody,
    routes: input.routes,
    ip: input.ip ?? '',
  };
  const key = idempotencyKeyOf(def, { ...parsed, caller, appId: app?.id ?? null }, scope.headers);
  scope.idempotency = key;
  const reply = await withIdempotency(em, def, key, async () => {
    const handler = (input.handler ?? def.handler) as (s: never) => unknown;
    const result = await Promise.resolve()
      .then(() => handler(scope as never))
      .catch((err: unknown) => {
        // The database went away after this request's change committed (a read for the answer, a second step): the
        // change is there, so the answer must not say it is not.
        if (hasCommitted(em) && isDatabaseUnavailable(err)) markOutcomeUnknown(err);
        throw err;
      });
    if (result instanceof Reply) return result;
    if (result === undefined) return new Reply(204, null);
    return new Reply(def.status ?? 200, result);
  });
  const answer = Object.keys(rate).length
    ? new Reply(reply.status, reply.body, { ...reply.headers, ...rate }, reply.contentType)
    : reply;
  return caller.kind === 'person' ? redactSecrets(def, answer) : answer;
}

/** The throttle's side of authentication (implemented by src/security/admission.ts). */
export interface RouteAdmission {
  unrecognized(ip: string, credential: string): Promise<void>;
  admit(
    caller: Scope<unknown, unknown, unknown>['caller'],
    app: Scope<unknown, unknown, unknown>['app'],
    ip: string,
  ): Promise<Record<string, string>>;
  readOnlyWrite(
    caller: Scope<unknown, unknown, unknown>['caller'],
    app: NonNullable<Scope<unknown, unknown, unknown>['app']>,
    ip: string,
  ): Promise<void>;
}

/** Where a route is served: to credentials (the API), or to signed-in people under `/console/api` (the console). */
export type Surface = 'api' | 'console';

/** The prefix under which every `/apps/:appId` route is served to people with their session. */
export const CONSOLE_API = '/console/api';

/** Whether a route is also served to people at `/console/api` + its path. */
export const servedToPeople = (def: RouteDef) =>
  def.path.startsWith('/apps/:appId') && !def.auth.includes('N') && !def.consoleHidden;

/**
 * What the router matched for a request: the route (null when the path exists with other methods only), its
 * parameters (each decoded once), the surface it is served on and every method the path has. Set on
 * `ctx.state.match` before anything else looks at the request; every guard and throttle reads it, never the path.
 */
export interface Match {
  def: RouteDef | null;
  params: Record<string, string>;
  surface: Surface;
  methods: string[];
  /** The transport of the path's routes (the MCP endpoint), known for every method (CORS preflights included). */
  transport: RouteDef['transport'];
  /** A path parameter whose percent-escapes are not UTF-8 (answered 400 before anything else runs). */
  malformed: string | null;
  run: Middleware | null;
}

export const matchOf = (ctx: Context): Match | null => (ctx.state.match as Match | undefined) ?? null;

/**
 * The bucket of a path or a route pattern: its third segment under `/apps/:appId/...` (after the console's
 * prefix, if any), and under an account (`/apps/:appId/namespaces/:accountId/<x>/...`) its fifth too; else its
 * first. Exact: the router matches case-sensitively, and a trailing slash is a segment.
 */
export function routeBucket(path: string): string {
  const console = path === CONSOLE_API || path.startsWith(`${CONSOLE_API}/`);
  const segments = (console ? path.slice(CONSOLE_API.length) || '/' : path).split('/');
  const bucket =
    segments[1] === 'apps' && segments[3] === 'namespaces' && segments.length > 5
      ? `/apps/*/namespaces/*/${segments[5]}`
      : segments[1] === 'apps' && segments.length > 3
        ? `/apps/*/${segments[3]}`
        : `/${segments[1] ?? ''}`;
  return console ? `${CONSOLE_API}${bucket}` : bucket;
}

export interface RouterEntry {
  method: string;
  path: string;
  chain: Middleware[];
  def?: RouteDef;
  surface?: Surface;
}

/**
 * The route table's matcher: one canonical spelling of every path. Matching is case-sensitive and a trailing
 * slash is not ignored, so `/APPS/...`, `/apps/x/plans/` and `//apps/...` match nothing (404); a percent-encoded
 * parameter is decoded once (`/apps/%61pp_1` names `app_1`), while an encoded static segment matches nothing. Where
 * a concrete path and a parameter's both match, the concrete one alone answers (see `match`).
 * Routes are kept in one `@koa/router` per bucket (`routeBucket`; the largest has about 30 routes), so a request
 * is tried against its bucket's routes only.
 */
export class RouteMatcher {
  private readonly buckets = new Map<string, Router>();
  private readonly entries = new Map<unknown, RouterEntry>();

  constructor(entries: readonly RouterEntry[]) {
    for (const entry of entries) {
      const bucket = routeBucket(entry.path);
      if (!this.buckets.has(bucket)) this.buckets.set(bucket, new Router({ sensitive: true, strict: true }));
      const layer = this.buckets.get(bucket)!.register(entry.path, [entry.method], entry.chain);
      this.entries.set(layer, entry);
    }
  }

  match(
    path: string,
    method: string,
  ): {
    entry: RouterEntry | null;
    params: Record<string, string>;
    methods: string[];
    others: RouterEntry[];
    /** A path parameter whose percent-escapes are not UTF-8. */
    malformed?: string | null;
  } | null {
    const router = this.buckets.get(routeBucket(path));
    if (!router) return null;
    const found = router.match(path, method === 'HEAD' ? 'GET' : method);
    if (!found.path.length) return null;
    // A concrete segment beats a parameter, for every method (OpenAPI's rule: `/namespaces/count` is that path
    // alone, not also `/namespaces/{accountId}`), so `Allow` and the answer to each method agree with the document.
    // An account (or plan, flow) with such an id is reached with a letter percent-encoded (`%63ount`).
    const fewest = Math.min(...found.path.map((l) => l.paramNames.length));
    const layers = found.path.filter((l) => l.paramNames.length === fewest);
    const methods = [...new Set(layers.flatMap((l) => l.methods))];
    const others = layers.map((l) => this.entries.get(l)!);
    const layer = found.pathAndMethod.find((l) => l.methods.length > 0 && layers.includes(l));
    if (!layer) return { entry: null, params: {}, methods, others };
    const captures = layer.captures(path);
    // The router keeps an escape it cannot decode as it is (`%FF`), which would name a record `%FF` (as `%25FF` does):
    // such a parameter is named instead, for a 400.
    const bad = captures.findIndex((c) => typeof c === 'string' && c.includes('%') && decodeComponent(c) === null);
    const malformed = bad < 0 ? null : (layer.paramNames[bad]?.name ?? null);
    return { entry: this.entries.get(layer)!, params: layer.params(path, captures), methods, others, malformed };
  }
}

/** Every route of the table as router entries, each `/apps/:appId` route also under the console's prefix. */
export function routeEntries(routes: readonly RouteDef[], chainOf: (def: RouteDef, surface: Surface) => Middleware[]) {
  const entries: RouterEntry[] = [];
  const seen = new Set<string>();
  for (const def of routes) {
    const key = `${def.method} ${def.path}`;
    if (seen.has(key)) throw new Error(`route declared twice: ${key}`);
    seen.add(key);
    entries.push({ method: def.method, path: def.path, chain: chainOf(def, 'api'), def, surface: 'api' });
    if (servedToPeople(def))
      entries.push({
        method: def.method,
        path: `${CONSOLE_API}${def.path}`,
        chain: chainOf(def, 'console'),
        def,
        surface: 'console',
      });
  }
  return entries;
}

/**
 * The router, in two parts around the guards that need to know the route before it runs (CORS, the MCP transport
 * guard): `match` finds the route once and sets `ctx.state.match` (and `ctx.params`); `dispatch` runs it (body
 * parsing, throttles, authentication, guards, validation, the handler), or answers 405 with `Allow` when the path
 * has other methods only (OPTIONS outside a CORS preflight answers 204 with `Allow`). A path the table does not
 * have goes on to `next` (the console's static files), else 404.
 */
export function buildRouter(
  routes: readonly RouteDef[],
  deps: Deps,
  opts: { identity?: Identity; throttle?: (def: RouteDef) => Middleware | null; admission?: RouteAdmission } = {},
): { match: Middleware; dispatch: Middleware } {
  const chainOf = (def: RouteDef, surface: Surface): Middleware[] => {
    const chain: Middleware[] = [checkUrlText(def.invalidInput)];
    if (HAS_BODY.has(def.method))
      chain.push(
        requestBody(def.bodyLimit ?? '1mb', {
          form: !!def.oauth || !!def.form,
          oauth: !!def.oauth,
          page: def.invalidInput,
        }),
      );
    const throttled = opts.throttle?.(def);
    if (throttled) chain.push(throttled);
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
          credential: surface === 'console' ? null : bearer(ctx),
          requestId: ctx.state.requestId as string,
          origin: requestOrigin(ctx, deps),
          headers: ctx.headers as Record<string, string | undefined>,
          rawBody: (ctx.request as { rawBody?: string }).rawBody,
          routes,
          ip: ctx.ip,
          surface,
          identity: opts.identity,
          admission: opts.admission,
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
    return chain;
  };
  const matcher = new RouteMatcher(routeEntries(routes, chainOf));
  const composed = new Map<RouterEntry, Middleware>();
  const runOf = (entry: RouterEntry) => {
    let run = composed.get(entry);
    if (!run) composed.set(entry, (run = compose(entry.chain)));
    return run;
  };
  return {
    match: (ctx, next) => {
      // Every answer under the console's API is a person's own data: no cache keeps it (errors and 404s included).
      if (ctx.path === CONSOLE_API || ctx.path.startsWith(`${CONSOLE_API}/`)) ctx.set('Cache-Control', 'no-store');
      const found = matcher.match(ctx.path, ctx.method);
      if (found) {
        const m: Match = {
          def: found.entry?.def ?? null,
          params: found.params,
          surface: found.entry?.surface ?? 'api',
          methods: found.methods,
          transport: found.others.find((e) => e.def?.transport)?.def?.transport,
          run: found.entry ? runOf(found.entry) : null,
          malformed: found.malformed ?? null,
        };
        ctx.state.match = m;
        ctx.state.route = m.def ?? undefined;
        (ctx as { params?: Record<string, string> }).params = found.params;
      }
      return next();
    },
    dispatch: async (ctx, next) => {
      const m = matchOf(ctx);
      if (!m) return next();
      if (m.run) return m.run(ctx, next);
      const allow = m.methods.join(', ');
      if (ctx.method === 'OPTIONS') {
        ctx.set('Allow', allow);
        ctx.status = 204;
        return;
      }
      // The MCP endpoint's GET and DELETE (the spec's 405: no event stream, no session to end) say why.
      const message =
        m.transport === 'mcp'
          ? 'Method not allowed: the MCP endpoint is stateless and has no event stream; POST JSON-RPC messages'
          : `Method ${ctx.method} is not allowed on ${ctx.path} (allowed: ${allow})`;
      throw new AppError(405, message, undefined, { Allow: allow });
    },
  };
}

/** Runs middleware in order (what koa-compose does, without another dependency for a dozen lines). */
function compose(chain: readonly Middleware[]): Middleware {
  return (ctx, next) => {
    const step = (i: number): Promise<void> =>
      i < chain.length ? Promise.resolve(chain[i](ctx, () => step(i + 1))) : Promise.resolve(next());
    return step(0);
  };
}

/** JSON-RPC's server-error code the MCP endpoint answers a throttled request with (MCP defines none for it). */
export const JSONRPC_THROTTLED = -32000;

/**
 * A throttled MCP request: 429 with `Retry-After`, and a JSON-RPC error for each request in the message (or batch),
 * its message naming the limit and `data.retry_after` the seconds to wait, so a client reads it as any MCP error.
 */
function jsonRpcThrottled(err: AppError, body: unknown): Reply {
  const retryAfter = Number(err.headers?.['Retry-After'] ?? 1);
  const messages = Array.isArray(body) ? body : [body];
  const ids = messages
    .map((m) => (m && typeof m === 'object' ? (m as { id?: unknown }).id : undefined))
    .filter((id): id is string | number => typeof id === 'string' || typeof id === 'number');
  const error = (id: string | number | null) => ({
    jsonrpc: '2.0' as const,
    id,
    error: {
      code: JSONRPC_THROTTLED,
      message: `${err.message}; retry after ${retryAfter} second${retryAfter === 1 ? '' : 's'}`,
      data: { retry_after: retryAfter },
    },
  });
  const answer = Array.isArray(body) ? (ids.length ? ids.map(error) : [error(null)]) : error(ids[0] ?? null);
  return new Reply(429, answer, err.headers ?? {});
}
