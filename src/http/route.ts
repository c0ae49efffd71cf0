import type { EntityManager } from '@mikro-orm/postgresql';
import type { Readable } from 'node:stream';
import type { z } from 'zod';
import type { IApp } from '../apps/apps.entities.js';
import type { Deps } from '../deps.js';
import type { Ctx } from '../context.js';
import type { Caller, Cred, Role } from './caller.js';

export { ROLES, type Caller, type Cred, type Person, type Role } from './caller.js';

/** A request's `Idempotency-Key`, scoped to its app and credential (src/http/idempotency.ts reads and writes it). */
export interface IdempotencyKey {
  appId: string | null;
  digest: Buffer;
  requestHash: Buffer;
}

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** Everything a handler gets: no Koa, so HTTP routes and MCP tools call the same handler. */
export interface Scope<P, Q, B> {
  em: EntityManager;
  deps: Deps;
  caller: Caller;
  /** The app named by `:appId`, already loaded and authorized; null on routes without one. */
  app: IApp | null;
  params: P;
  query: Q;
  body: B;
  requestId: string;
  /** Origin the request came in on (for links); see PUBLIC_API_URL. */
  origin: string;
  /** Request headers (lower-case names), for routes that verify signed requests. */
  headers: Record<string, string | undefined>;
  /** The request body exactly as received (JSON text), for routes that verify signed requests. */
  rawBody: string | undefined;
  /** The route table this request is served from (the MCP server derives its tools from it). */
  routes: readonly RouteDef[];
  /** The request's `Idempotency-Key`, for routes that write it with their change (`idempotency: 'atomic'`). */
  idempotency?: IdempotencyKey | null;
  /** The client's address (forwarded headers count only under TRUST_PROXY). */
  ip: string;
}

/**
 * A full reply, for answers besides the route's JSON body at its status: a JSON body at another status (typed
 * by the route's response schema), a redirect (null body) or a non-JSON page (string or bytes with a content
 * type). Each such answer is documented in the route's `replies`.
 */
export class Reply<B = unknown> {
  constructor(
    readonly status: number,
    readonly body: B,
    readonly headers: Record<string, string | string[]> = {},
    readonly contentType?: string,
  ) {}
}

/**
 * A body that is not JSON: a page or a file (with its content type), an event stream (the MCP endpoint asking the
 * person before a destructive tool), or none (a redirect, an empty 202).
 */
export type RawBody = string | Uint8Array | Readable | null;

/** An answer a route documents besides its JSON body at its success status. */
export interface ReplyDoc {
  description: string;
  /** The JSON body's schema (the route's response schema, or another). */
  schema?: z.ZodType;
  /** The content type(s) of a body that is not JSON (`text/html`, `text/plain`, ...). Neither: no body. */
  contentType?: string | string[];
  /** For `text/event-stream`: the event names it sends (each event's `data` is JSON). */
  events?: string[];
}

/**
 * MCP exposure: the route is also a tool of each app's MCP server. Everything else about the tool
 * (description, input schema, the call itself) is derived from the route.
 */
/**
 * The account id's name in every MCP tool's arguments, resource template and prompt: `namespaceId`, as the spec's MCP
 * section names it (rule 4: "with the account id as `namespaceId`"; its tool table: `/namespaces/:namespaceId`).
 */
export const MCP_ACCOUNT_ARG = 'namespaceId';

export interface McpTool {
  /** The tool name of the spec's tool table. */
  tool: string;
  /** R read, W write, F full. */
  level: 'R' | 'W' | 'F';
  /**
   * For a model, after the route's summary and description: when to use the tool and what it returns, in full
   * sentences (the tool's description is the three together).
   */
  use: string;
  /**
   * For a model, in place of the route's description (written for REST readers) where that says more than a tool
   * needs or repeats what the input's descriptions say; '' for none.
   */
  about?: string;
  /** Input fields left out (filters the tool does not offer, fields it may not change). */
  omit?: string[];
  /** Only these body fields are offered. */
  only?: string[];
  /**
   * Query or body fields the tool's arguments name otherwise, so one thing has one name across tools: the account id
   * is `namespaceId` (the spec's name; the path parameter `accountId` is renamed by the MCP layer itself), and a body
   * `id` naming another record takes the name its sibling tools give it (`{ id: 'entitlementId' }`). REST and the
   * SDK keep the route's names; errors name the tool's argument.
   */
  rename?: Record<string, string>;
  /** The whole body is taken from this argument (merge_plan_meta's `meta`). */
  bodyArg?: string;
  /** Keys redacted anywhere in the result. */
  redact?: string[];
  /** Calls URLs outside the service (webhook endpoints, the payment provider): a dry run describes the call. */
  openWorld?: boolean;
  /**
   * What a call that reaches outside (`openWorld`, without `spends`) would do, for its dry run: the route's lookups
   * (a missing record's 404, a state's 409) as the route makes them, then a sentence saying what would be sent where.
   * Runs after the route's guards and validation; makes no call and changes nothing.
   */
  preview?: (ctx: Ctx, params: Record<string, string>, body: unknown) => Promise<string>;
  /**
   * Money the call starts (a checkout or a plan change), from its parsed input: counted against an MCP connection's
   * spend cap, and what a dry run describes instead of calling the payment provider. Throws the route's own error
   * when the call would fail (no price, no subscription).
   */
  spends?: (ctx: Ctx, params: Record<string, string>, body: unknown) => Promise<McpSpend>;
  /** Usage the call records, from its parsed input: counted against the connection's usage cap of the entitlement. */
  records?: (params: Record<string, string>, body: unknown) => { entitlementId: string; amount: number } | null;
}

/** What a tool's call would start, in money: the amount and currency, and a sentence for a dry run. */
export interface McpSpend {
  amount: number;
  currency: string;
  description: string;
}

type Infer<S> = S extends z.ZodType ? z.output<S> : Record<string, never>;

/** The JSON a handler sends for a response schema: the schema's input, which the tests parse every body with. */
export type Wire<RS> = RS extends z.ZodType ? z.input<RS> : never;

/**
 * What a handler may return: its response schema's JSON (sent with the route's status), a Reply with such a
 * body or a raw one, or nothing (204) on a route without a response schema.
 */
export type HandlerResult<RS> =
  Wire<RS> | Reply<Wire<RS>> | Reply<RawBody> | (RS extends z.ZodType ? never : void | undefined);

export interface RouteDef<
  PS extends z.ZodType | undefined = z.ZodType | undefined,
  QS extends z.ZodType | undefined = z.ZodType | undefined,
  BS extends z.ZodType | undefined = z.ZodType | undefined,
  RS extends z.ZodType | undefined = z.ZodType | undefined,
> {
  method: HttpMethod;
  path: string;
  /**
   * The operation's stable name, `<resource>.<action>` in camelCase (`accounts.create`, `usage.add`): the typed
   * SDK's method and the OpenAPI operationId. Unique in the table; renaming one breaks SDK users.
   */
  sdk: string;
  auth: Cred[];
  summary: string;
  description?: string;
  tags: string[];
  params?: PS;
  query?: QS;
  body?: BS;
  /** Success status (default 200). */
  status?: number;
  /**
   * The JSON body at the success status: the handler's result is typed by it, the OpenAPI document shows it,
   * and tests parse every response with it. No transforms or defaults: it describes the wire.
   */
  response?: RS;
  /** Other answers the handler gives as a Reply (another status, a redirect, a page); keyed by status. */
  replies?: Record<number, ReplyDoc>;
  /** Also an MCP tool (name, level and how its input is derived). */
  mcp?: McpTool;
  /** Error statuses worth documenting beyond those derived from the route (400, 401, 404). */
  errors?: number[];
  /** Request body limit override, for bulk routes. */
  bodyLimit?: string;
  /** `WWW-Authenticate` value sent with this route's 401 (the MCP route's resource metadata pointer). */
  challenge?: (
    origin: string,
    params: Record<string, string>,
    credentialSent: boolean,
    ctx: { em: EntityManager; routes: readonly RouteDef[] },
  ) => string | Promise<string>;
  /**
   * OAuth endpoints: bodies may also be forms, and invalid input is `{ error: <code>, error_description }`
   * (`invalid_request`, or the code given here).
   */
  oauth?: boolean | { invalidInput: string };
  /**
   * The body may also be a form (`application/x-www-form-urlencoded`, flat fields), as on the consent pages; unlike
   * `oauth`, unknown fields are refused and errors keep the route's own form (its `invalidInput` page).
   */
  form?: boolean;
  /**
   * `Idempotency-Key` handling on a POST (src/http/idempotency.ts): by default the key is claimed before
   * the handler runs and its response recorded after; `atomic`: the handler writes the key in the
   * statement that makes its change; `false`: the header is ignored.
   */
  idempotency?: 'atomic' | false;
  /**
   * Whether the route changes anything (default: every method but GET). The read-only demo app and people's roles
   * are decided on it; a POST that stores nothing (a preview) says `false`.
   */
  writes?: boolean;
  /**
   * The least role a person needs on this route through the console (default: viewer for reads, member for
   * writes; admin-only app routes: admin for writes).
   */
  role?: Role;
  /**
   * Response fields that are credentials (the secret key, a webhook signing secret): sent as `[redacted]` to every
   * person through the console (they see one only through an explicit, logged reveal route whose `role` says who
   * may) and in every MCP tool's result. Keys of the app itself see them (docs/security.md, "Who sees which secret").
   */
  secretFields?: string[];
  /**
   * On a read-only app (the demo): whether this write is allowed anyway (a test send to the demo's built-in
   * receiver changes no demo data).
   */
  readOnlyExempt?: (scope: {
    em: EntityManager;
    deps: Deps;
    app: IApp;
    params: Record<string, string>;
  }) => Promise<boolean>;
  /** Throttles this route takes besides the credential ones (src/security/throttle.ts). */
  throttle?: (
    | 'register'
    | 'authorize'
    | 'consent-sign-in'
    | 'token-grant'
    | 'sign-in'
    | 'public-checkout'
    | 'provider-notification'
  )[];
  /** The MCP transport endpoint: Host and Origin are checked (DNS rebinding) and CORS reflects allowed origins only. */
  transport?: 'mcp';
  /** Not served to people under `/console/api` (default: every `/apps/:appId` route but open ones is). */
  consoleHidden?: boolean;
  /** The level of this route's request log line (default info): `debug` for the service's own loopback traffic. */
  log?: 'debug';
  /** Answers invalid input itself (the authorization endpoint shows an HTML page, never JSON). */
  invalidInput?: (message: string) => Reply<RawBody>;
  handler: (
    scope: Scope<Infer<PS>, Infer<QS>, Infer<BS>>,
  ) => Promise<HandlerResult<NoInfer<RS>>> | HandlerResult<NoInfer<RS>>;
}

/** Declares a route with its schemas inferred into the handler's types. */
export function route<
  PS extends z.ZodType | undefined = undefined,
  QS extends z.ZodType | undefined = undefined,
  BS extends z.ZodType | undefined = undefined,
  RS extends z.ZodType | undefined = undefined,
>(def: RouteDef<PS, QS, BS, RS>): RouteDef {
  return def as unknown as RouteDef;
}

/** The domain-service context of an app route (the app is loaded and authorized by then). */
export function ctxOf(scope: { em: EntityManager; deps: Deps; app: IApp | null }) {
  if (!scope.app) throw new Error('route has no app');
  return { em: scope.em, deps: scope.deps, app: scope.app };
}
