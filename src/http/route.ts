import type { EntityManager } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import type { IApp } from '../apps/apps.entities.js';
import type { Deps } from '../deps.js';
import type { IdempotencyKey } from './idempotency.js';

/**
 * Credential classes, as in the spec: S secret key, P publishable key, T account token (its own
 * account), A admin key only, N no credential, O an MCP OAuth access token (`mcp_at_...`) of the app.
 * The admin key is accepted on every `/apps/:appId` route.
 */
export type Cred = 'S' | 'P' | 'T' | 'A' | 'N' | 'O';

export type Caller =
  | { kind: 'none' }
  | { kind: 'admin' }
  | { kind: 'secret' }
  | { kind: 'publishable' }
  | { kind: 'token'; accountId: string; expiresAt: Date }
  | { kind: 'oauth'; connectionId: string; level: 'read' | 'write' | 'full' };

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
  /** The request's `Idempotency-Key`, for routes that write it with their change (`idempotency: 'atomic'`). */
  idempotency?: IdempotencyKey | null;
}

/** A handler may return a body (sent with the route's status) or a full reply. */
export class Reply {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: Record<string, string> = {},
    readonly contentType?: string,
  ) {}
}

type Infer<S> = S extends z.ZodType ? z.output<S> : Record<string, never>;

export interface RouteDef<
  PS extends z.ZodType | undefined = z.ZodType | undefined,
  QS extends z.ZodType | undefined = z.ZodType | undefined,
  BS extends z.ZodType | undefined = z.ZodType | undefined,
> {
  method: HttpMethod;
  path: string;
  auth: Cred[];
  summary: string;
  description?: string;
  tags: string[];
  params?: PS;
  query?: QS;
  body?: BS;
  /** Success status (default 200). */
  status?: number;
  /** Response schema for the OpenAPI document. */
  response?: z.ZodType;
  /** Error statuses worth documenting beyond those derived from the route (400, 401, 404). */
  errors?: number[];
  /** Request body limit override, for bulk routes. */
  bodyLimit?: string;
  /** `WWW-Authenticate` value sent with this route's 401 (the MCP route's resource metadata pointer). */
  challenge?: (origin: string, params: Record<string, string>, credentialSent: boolean) => string;
  /**
   * OAuth endpoints: bodies may also be forms, and invalid input is `{ error: <code>, error_description }`
   * (`invalid_request`, or the code given here).
   */
  oauth?: boolean | { invalidInput: string };
  /**
   * `Idempotency-Key` handling on a POST (src/http/idempotency.ts): by default the key is claimed before
   * the handler runs and its response recorded after; `atomic`: the handler writes the key in the
   * statement that makes its change; `false`: the header is ignored.
   */
  idempotency?: 'atomic' | false;
  /** Answers invalid input itself (the authorization endpoint shows an HTML page, never JSON). */
  invalidInput?: (message: string) => Reply;
  handler: (scope: Scope<Infer<PS>, Infer<QS>, Infer<BS>>) => Promise<unknown> | unknown;
}

/** Declares a route with its schemas inferred into the handler's types. */
export function route<
  PS extends z.ZodType | undefined = undefined,
  QS extends z.ZodType | undefined = undefined,
  BS extends z.ZodType | undefined = undefined,
>(def: RouteDef<PS, QS, BS>): RouteDef {
  return def as unknown as RouteDef;
}

/** The domain-service context of an app route (the app is loaded and authorized by then). */
export function ctxOf(scope: { em: EntityManager; deps: Deps; app: IApp | null }) {
  if (!scope.app) throw new Error('route has no app');
  return { em: scope.em, deps: scope.deps, app: scope.app };
}
