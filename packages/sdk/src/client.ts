import { Core, type ClientOptions, type RequestOptions } from './core.js';
import { OfferkitError } from './errors.js';
import type { APIPromise } from './response.js';
import {
  OPERATIONS,
  type AccountTokenResources,
  type Operation,
  type PublishableResources,
  type SecretResources,
} from './generated/api.js';
import { CursorPagePromise, PagePromise, type CursorPage, type Page } from './pagination.js';
import { verifyWebhook } from './webhooks.js';
import { LocalEvaluator, type LocalOptions, type LocalSource } from './local.js';

type Cred = 'S' | 'P' | 'T';

function invoke(core: Core, op: Operation, args: unknown[]) {
  const pathArgs = args.slice(0, op.params.length) as string[];
  let i = op.params.length;
  const body = op.body ? args[i++] : undefined;
  const query = (op.query ? args[i++] : undefined) as Record<string, unknown> | undefined;
  const options = args[i] as RequestOptions | undefined;
  if (op.paginated === 'page') {
    const start = Number(query?.page ?? 1);
    return new PagePromise(
      (page) => core.call(op, pathArgs, body, { ...query, page }, options) as Promise<Page<unknown>>,
      start,
    );
  }
  if (op.paginated === 'cursor') {
    const start = query?.cursor === undefined ? undefined : String(query.cursor);
    return new CursorPagePromise(
      (cursor) => core.call(op, pathArgs, body, { ...query, cursor }, options) as Promise<CursorPage<unknown>>,
      start,
    );
  }
  return core.call(op, pathArgs, body, query, options);
}

/** The part every client shares: the app, raw requests, and the namespaces of its credential. */
class ClientBase {
  /** @internal */
  protected readonly core: Core;

  constructor(core: Core, cred: Cred) {
    this.core = core;
    const self = this as unknown as Record<string, Record<string, unknown>>;
    for (const op of OPERATIONS) {
      if (!op.auth.includes(cred)) continue;
      const [ns, method] = op.name.split('.');
      if (ns in ClientBase.prototype || ns === 'core') throw new OfferkitError(`namespace ${ns} clashes`);
      (self[ns] ??= {})[method] = (...args: unknown[]) => invoke(core, op, args);
    }
  }

  /** The app every call goes to. */
  get appId(): string {
    return this.core.appId;
  }

  /** The service's address. */
  get baseUrl(): string {
    return this.core.baseUrl;
  }

  /**
   * Any route, with this client's credential, timeout, retries and errors: `request('GET', '/event-types')`.
   * The path is taken as is (fill in the app id yourself).
   */
  request<T = unknown>(
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    path: string,
    req: { body?: unknown; query?: Record<string, unknown>; options?: RequestOptions } = {},
  ): APIPromise<T> {
    return this.core.request(method, path, req) as APIPromise<T>;
  }
}

function withResources<R>() {
  return ClientBase as unknown as new (core: Core, cred: Cred) => ClientBase & R;
}

export interface SecretClientOptions extends ClientOptions {
  /** The app's secret key, `key_...` (or the admin key). Never ship it to a browser. */
  secretKey: string;
  /** The app the key belongs to, `app_...`. */
  appId: string;
}

/** The secret key's webhooks namespace also verifies deliveries (`client.webhooks.verify(raw, headers, secret)`). */
export type SecretClientResources = Omit<SecretResources, 'webhooks'> & {
  webhooks: SecretResources['webhooks'] & { verify: typeof verifyWebhook };
};

/**
 * Server side, with the app's secret key: every route of the app. `client.accounts.create({ id: 'alice' })`,
 * `client.usage.add('alice', 'api_calls')`, `for await (const a of client.accounts.list()) ...`.
 */
export class SecretClient extends withResources<SecretClientResources>() {
  constructor(options: SecretClientOptions) {
    if (options?.secretKey?.startsWith('pub_') || options?.secretKey?.startsWith('act_'))
      throw new OfferkitError('SecretClient takes the secret key; use PublishableClient or AccountTokenClient');
    super(new Core(options?.secretKey, options?.appId, options), 'S');
    (this.webhooks as { verify?: typeof verifyWebhook }).verify = verifyWebhook;
    this.secretKey = options.secretKey;
  }

  private readonly secretKey: string;

  /**
   * Access checks from memory, kept fresh by the change stream; usage buffered while the API is unreachable
   * (docs/sdk.md, "Local evaluation"). Close it with `close()`.
   */
  local(options: LocalOptions = {}): LocalEvaluator {
    return new LocalEvaluator(this as unknown as LocalSource, this.secretKey, options);
  }
}

export interface PublishableClientOptions extends ClientOptions {
  /** The app's publishable key, `pub_...`: safe in a browser. */
  publishableKey: string;
  /** The app the key belongs to, `app_...`. */
  appId: string;
}

/**
 * Browser side, with the app's publishable key: access reads, adding usage, pricing cards, public offers and
 * checkouts. Only those namespaces and methods exist on it.
 */
export class PublishableClient extends withResources<PublishableResources>() {
  constructor(options: PublishableClientOptions) {
    if (options?.publishableKey && !options.publishableKey.startsWith('pub_'))
      throw new OfferkitError('PublishableClient takes the publishable key (pub_...)');
    super(new Core(options?.publishableKey, options?.appId, options), 'P');
  }
}

export interface AccountTokenClientOptions extends ClientOptions {
  /** An account token, `act_...`, minted on your server with `accounts.createToken`. */
  accountToken: string;
  /** Optional: the token names its app; when given it must match. */
  appId?: string;
}

/** What an account token says about itself (its payload is readable; only the service can check it). */
export interface AccountTokenInfo {
  appId: string;
  accountId: string;
  expiresAt: Date;
}

/** Reads an account token's app, account and expiry (without verifying it). */
export function decodeAccountToken(token: string): AccountTokenInfo {
  const m = /^act_([A-Za-z0-9_-]+)\.[A-Za-z0-9_-]+$/.exec(token ?? '');
  if (!m) throw new OfferkitError('Not an account token (act_<payload>.<signature>)');
  try {
    const b64 = m[1].replace(/-/g, '+').replace(/_/g, '/');
    const json = new TextDecoder().decode(Uint8Array.from(atob(b64), (ch) => ch.charCodeAt(0)));
    const p = JSON.parse(json) as { a?: unknown; n?: unknown; e?: unknown };
    if (typeof p.a !== 'string' || typeof p.n !== 'string' || typeof p.e !== 'number') throw new Error('fields');
    return { appId: p.a, accountId: p.n, expiresAt: new Date(p.e * 1000) };
  } catch {
    throw new OfferkitError('Not an account token (unreadable payload)');
  }
}

/**
 * Browser side, with an account token: that account's access reads and subscription, and its cancel sessions.
 * The app comes from the token; `accountId` is the account it is for.
 */
export class AccountTokenClient extends withResources<AccountTokenResources>() {
  readonly accountId: string;
  readonly expiresAt: Date;

  constructor(options: AccountTokenClientOptions) {
    const info = decodeAccountToken(options?.accountToken);
    if (options.appId && options.appId !== info.appId)
      throw new OfferkitError(`The account token is for app ${info.appId}, not ${options.appId}`);
    super(new Core(options.accountToken, info.appId, options), 'T');
    this.accountId = info.accountId;
    this.expiresAt = info.expiresAt;
  }
}
