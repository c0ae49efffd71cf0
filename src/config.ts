import path from 'node:path';
import { z } from 'zod';

const bool = z
  .enum(['true', 'false', '1', '0', ''])
  .optional()
  .transform((v) => v === 'true' || v === '1');

const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

const optionalUrl = optionalString.refine((v) => v === undefined || URL.canParse(v), 'must be a URL');

const port = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback);

/** Every environment setting the service reads, parsed once. */
export const configSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** `auto`: short readable lines on a terminal, one JSON object per line otherwise. */
  LOG_FORMAT: z.enum(['auto', 'json', 'pretty']).default('auto'),
  HOST: z.string().default('0.0.0.0'),
  PORT: port(3000),
  DATA_DIR: z.string().default('./.data'),
  /** External PostgreSQL. When unset, an embedded server is started under DATA_DIR. */
  DATABASE_URL: optionalUrl,
  EMBEDDED_POSTGRES_PORT: port(54320),
  DB_POOL_MAX: z.coerce.number().int().min(1).max(500).default(20),
  /**
   * Bounds on every wait for PostgreSQL (src/db/bounds.ts), chosen so that a database that stops answering (frozen,
   * partitioned, a lock pile-up) turns a request into a 503 within 5 s: connecting, and waiting for a free pooled
   * connection, at most DB_CONNECT_TIMEOUT_MS; a statement at most DB_STATEMENT_TIMEOUT_MS (PostgreSQL's
   * `statement_timeout`; the client gives up half a second later and drops the connection).
   */
  DB_CONNECT_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(2000),
  DB_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(2000),
  /**
   * The bound of the statements of long work (migrations run unbounded; the analytics roll-up, imports, retention
   * purges, an app's deletion), set for their transaction only; the client meanwhile checks that the server answers.
   */
  DB_LONG_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(1000).default(600_000),
  /**
   * PostgreSQL's `idle_in_transaction_session_timeout`: a session that waits this long inside a transaction is ended
   * (its locks freed). At most the statement bound plus the half second, so a COMMIT its caller gave up on (503)
   * cannot apply when a frozen server resumes (docs/decisions/0248-a-write-answered-503-does-not-commit-later-unless-its.md).
   */
  DB_IDLE_IN_TRANSACTION_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(2000),
  /**
   * The most usage rows an analytics request reads from the history the roll-up has not reached yet (beyond its
   * normal lag of a few hours); past it the request answers 503 with `Retry-After` while the roll-up catches up.
   */
  ANALYTICS_UNROLLED_ROWS_MAX: z.coerce.number().int().min(1).default(250_000),
  /**
   * Runs of one hot statement (usage add, effective access) each API process has at the database at once; the
   * requests that arrive meanwhile go together as one batch (src/db/coalesce.ts). 0: every request alone.
   */
  DB_COALESCE_IN_FLIGHT: z.coerce.number().int().min(0).max(500).default(2),
  /**
   * Listen with SO_REUSEPORT (Linux): several API processes on one host share PORT, the kernel spreading new
   * connections across them, so a host runs one process per core without a load balancer in front.
   */
  API_REUSE_PORT: bool,
  /** External Temporal frontend (host:port). When unset, the Temporal CLI dev server is started. */
  TEMPORAL_ADDRESS: optionalString,
  TEMPORAL_NAMESPACE: z.string().default('default'),
  TEMPORAL_TASK_QUEUE: z.string().default('offerkit'),
  /**
   * Mutual TLS to the Temporal frontend (Temporal Cloud, or a self-hosted cluster with TLS): files of the client
   * certificate and its key (PEM), both or neither; TEMPORAL_TLS_CA a CA bundle for a server certificate not signed
   * by a public CA; TEMPORAL_TLS_SERVER_NAME overrides the name checked in the server's certificate.
   */
  TEMPORAL_TLS_CERT: optionalString,
  TEMPORAL_TLS_KEY: optionalString,
  TEMPORAL_TLS_CA: optionalString,
  TEMPORAL_TLS_SERVER_NAME: optionalString,
  /** Temporal Cloud API key (instead of mTLS); sent as a bearer token over TLS. */
  TEMPORAL_API_KEY: optionalString,
  TEMPORAL_PORT: port(7233),
  TEMPORAL_UI_PORT: port(8233),
  /** The Temporal UI of an external cluster (e.g. `https://temporal.example.com`): the console's workflow links open it. */
  TEMPORAL_UI_URL: optionalUrl,
  TEMPORAL_CLI: optionalString,
  ADMIN_API_KEY: optionalString,
  PUBLIC_API_URL: optionalUrl,
  APP_URL: optionalUrl,
  WEBHOOKS_ALLOW_PRIVATE_URLS: bool,
  /**
   * Delays before webhook attempts 2..7, in milliseconds, comma-separated. The default is the spec's
   * schedule (1 min, 5 min, 30 min, 2 h, 8 h, 24 h); tests compress it.
   */
  WEBHOOK_RETRY_SCHEDULE_MS: z
    .string()
    .default('60000,300000,1800000,7200000,28800000,86400000')
    .transform((v) => v.split(',').map((x) => Number(x.trim())))
    .refine(
      (a) => a.length >= 1 && a.length <= 20 && a.every((n) => Number.isInteger(n) && n >= 0),
      'must be comma-separated non-negative integers',
    ),
  /**
   * PayPal's API base URL for every app, overriding the sandbox/live URLs (e.g. a stand-in). When
   * unset outside production, `npm start` runs the local PayPal stand-in and uses it.
   */
  PAYPAL_BASE_URL: optionalUrl,
  /** Port of the local PayPal stand-in that `npm start` runs (embedded default). */
  PAYPAL_STANDIN_PORT: port(8900),
  /**
   * How often the local stand-in bills the cycles that came due in real time (so a long-running `npm start` renews);
   * 0 turns the tick off (cycles then bill only when a test clock moves).
   */
  PAYPAL_STANDIN_TICK_SECONDS: z.coerce.number().int().min(0).max(86_400).default(60),
  /**
   * How long `POST /apps/:appId/test-clock/advance` waits for everything due by its `to` to run before it answers
   * 202 (the rest goes on, and the clock reaches `to` within a minute).
   */
  TEST_CLOCK_WAIT_MS: z.coerce.number().int().min(0).max(120_000).default(20_000),
  /**
   * Reverse proxies in front of the API whose forwarded headers are believed: unset, `false` or `0`
   * trusts none (the socket address and the Host header are used); `true` means one proxy; a number
   * is how many proxies append to `X-Forwarded-For`. Only then do `X-Forwarded-Proto`,
   * `X-Forwarded-Host` and `X-Forwarded-For` count (links, OAuth metadata, client addresses).
   */
  TRUST_PROXY: z
    .string()
    .optional()
    .transform((v) => (v === undefined ? '' : v.trim().toLowerCase()))
    .refine((v) => /^(|true|false|\d{1,2})$/.test(v), 'must be true, false or a number of proxies')
    .transform((v) => (v === '' || v === 'false' ? 0 : v === 'true' ? 1 : Number(v))),
  /**
   * Requests per second, counted in each API process's memory, per publishable key and client address, per
   * account token and per MCP OAuth connection; 0 turns it off.
   */
  RATE_LIMIT_PER_SECOND: z.coerce.number().int().min(0).default(100),
  /** The same for secret keys (per app) and the admin key; 0 (the default) leaves a backend unlimited. */
  SECRET_KEY_RATE_LIMIT_PER_SECOND: z.coerce.number().int().min(0).default(0),
  /**
   * Failed credentials (ones that match nothing) per client address, and per presented credential, within
   * AUTH_FAILURE_WINDOW_SECONDS before further failures from it get 429 instead of 401 (a valid credential is never
   * refused); 0 turns it off.
   */
  AUTH_FAILURE_LIMIT: z.coerce.number().int().min(0).default(20),
  AUTH_FAILURE_WINDOW_SECONDS: z.coerce.number().int().min(1).default(900),
  /** OAuth client registrations per client address within OAUTH_REGISTER_WINDOW_SECONDS; 0 turns it off. */
  OAUTH_REGISTER_LIMIT: z.coerce.number().int().min(0).default(20),
  OAUTH_REGISTER_WINDOW_SECONDS: z.coerce.number().int().min(1).default(3600),
  /**
   * Failed console sign-ins within SIGN_IN_FAILURE_WINDOW_SECONDS: per account (email) from browsers that have not
   * signed in to it before, and per browser that has (its sign-in device cookie); 0 turns it off.
   */
  SIGN_IN_FAILURE_LIMIT: z.coerce.number().int().min(0).default(10),
  SIGN_IN_FAILURE_WINDOW_SECONDS: z.coerce.number().int().min(1).default(900),
  /** Failed console sign-ins per client address (not API credentials: those are AUTH_FAILURE_LIMIT's); 0: off. */
  SIGN_IN_FAILURE_LIMIT_PER_ADDRESS: z.coerce.number().int().min(0).default(20),
  /**
   * Checkouts opened with a publishable key (each makes objects at the payment provider), per account and per
   * client address within PUBLIC_CHECKOUT_WINDOW_SECONDS; 0 turns either off.
   */
  PUBLIC_CHECKOUT_LIMIT_PER_ACCOUNT: z.coerce.number().int().min(0).default(10),
  PUBLIC_CHECKOUT_LIMIT_PER_ADDRESS: z.coerce.number().int().min(0).default(30),
  PUBLIC_CHECKOUT_WINDOW_SECONDS: z.coerce.number().int().min(1).default(3600),
  /** Registered OAuth clients that never completed a sign-in are removed after this many hours. */
  OAUTH_UNUSED_CLIENT_HOURS: z.coerce.number().int().min(1).default(24),
  /** Authorization requests (`GET /oauth/authorize`) per client address and window; 0 turns it off. */
  OAUTH_AUTHORIZE_LIMIT: z.coerce.number().int().min(0).default(60),
  OAUTH_AUTHORIZE_WINDOW_SECONDS: z.coerce.number().int().min(1).default(900),
  /** Client ID Metadata Document fetches (cache misses) per client address and window; 0 turns it off. */
  OAUTH_METADATA_FETCH_LIMIT: z.coerce.number().int().min(0).default(10),
  OAUTH_METADATA_FETCH_WINDOW_SECONDS: z.coerce.number().int().min(1).default(3600),
  /** Clients made from metadata documents that have not completed a sign-in, in all; 0 turns the cap off. */
  OAUTH_METADATA_CLIENT_LIMIT: z.coerce.number().int().min(0).default(1000),
  /** Failed grants at `POST /oauth/token` per client address and window, then 429; 0 turns it off. */
  OAUTH_TOKEN_FAILURE_LIMIT: z.coerce.number().int().min(0).default(20),
  OAUTH_TOKEN_FAILURE_WINDOW_SECONDS: z.coerce.number().int().min(1).default(900),
  /** Payment provider notifications that fail verification, per client address and window; 0 turns it off. */
  NOTIFICATION_FAILURE_LIMIT: z.coerce.number().int().min(0).default(30),
  NOTIFICATION_FAILURE_WINDOW_SECONDS: z.coerce.number().int().min(1).default(900),
  /** Writes a read-only (demo) app allows anyway (test sends, retries), per caller and app and window; 0: off. */
  DEMO_SEND_LIMIT: z.coerce.number().int().min(0).default(20),
  DEMO_SEND_WINDOW_SECONDS: z.coerce.number().int().min(1).default(600),
  /** Browser origins allowed to call `/apps/:appId/mcp` besides PUBLIC_API_URL's (comma-separated). */
  MCP_ALLOWED_ORIGINS: z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean),
    )
    .refine((a) => a.every((o) => URL.canParse(o)), 'must be comma-separated origins such as https://app.example'),
  /**
   * Host names `/apps/:appId/mcp` answers to (comma-separated). When set, or when HOST is a loopback
   * address, any other Host header is refused (DNS rebinding).
   */
  MCP_ALLOWED_HOSTS: z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((x) => x.trim().toLowerCase())
        .filter(Boolean),
    ),
  /** A 402 checks an account's newest open checkout with the provider at most once per this many seconds. */
  UPGRADE_SETTLE_INTERVAL_SECONDS: z.coerce.number().int().min(0).default(60),
  /** New provider approval links a 402 may create per account and hour. */
  UPGRADE_LINKS_PER_HOUR: z.coerce.number().int().min(0).default(3),
  /**
   * The credential cache (docs/operations.md, "Credential cache"): how long an API process may use an app's keys
   * without reading them again, as a safety net behind the invalidation every process gets when keys
   * are regenerated or an app changes or is deleted. 0 turns the cache off (every request reads its app).
   */
  CREDENTIAL_CACHE_TTL_SECONDS: z.coerce.number().int().min(0).max(86_400).default(60),
  /** The most apps one API process keeps in its credential cache (least recently used go first). */
  CREDENTIAL_CACHE_MAX_APPS: z.coerce.number().int().min(1).default(10_000),
  /**
   * How long a key regeneration, app change or deletion waits for every API process to confirm it dropped
   * the app; a process that does not answer in time has its listener connection ended.
   */
  CREDENTIAL_CACHE_CONFIRM_MS: z.coerce.number().int().min(100).max(60_000).default(2000),
  /**
   * Cap of the backoff between retries of a workflow activity that failed (the provider unreachable: they retry for
   * as long as the business rule allows). Default 1 min; tests shorten it. One that cannot reach PostgreSQL waits for
   * it in the worker instead (src/temporal/wait-for-database.ts) and retries a second after each wait.
   */
  ACTIVITY_RETRY_MAX_MS: z.coerce.number().int().min(10).optional(),
  /** How often the reconciler Schedule looks for waiting rows whose workflow is gone (spec: 10 minutes). */
  RECONCILE_EVERY_MS: z.coerce.number().int().min(1000).default(600_000),
  /** How long a waiting row must have been left alone before the reconciler looks at it. */
  RECONCILE_GRACE_MS: z.coerce.number().int().min(0).default(120_000),
  /**
   * The change stream (GET /apps/:appId/stream): how long its events are kept for a reader that resumes with
   * `Last-Event-ID` (older: a `resync` event), the bytes one connection may have waiting to be read before it is
   * dropped, the seconds between keep-alive comments, and the least time between two `usage` events of a counter.
   */
  STREAM_RETENTION_HOURS: z.coerce
    .number()
    .min(0.01)
    .max(24 * 30)
    .default(24),
  STREAM_MAX_BUFFER_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .default(1024 * 1024),
  STREAM_HEARTBEAT_SECONDS: z.coerce.number().min(0.1).max(300).default(15),
  STREAM_USAGE_FLUSH_MS: z.coerce.number().int().min(10).max(10_000).default(250),
  /** How often the outbox relay looks for workflow starts that did not happen after commit. */
  OUTBOX_POLL_MS: z.coerce.number().int().min(50).default(2000),
  /**
   * Dynamic save offers in cancel flows: an OpenAI-compatible model provider, called through the
   * official `openai` SDK. Dynamic offers are off while OPENAI_API_KEY is unset.
   */
  OPENAI_API_KEY: optionalString,
  /** The model provider's API base URL (e.g. a compatible gateway or a local stand-in). */
  OPENAI_BASE_URL: optionalUrl,
  OPENAI_MODEL: z.string().default('gpt-4.1-mini'),
  /** How long a cancel session waits for the model before it falls back to the static offer. */
  DYNAMIC_OFFER_TIMEOUT_MS: z.coerce.number().int().min(100).max(60000).default(6000),
  /** Signs the console's session cookies; derived from the admin key when unset. */
  CONSOLE_AUTH_SECRET: optionalString,
  /**
   * Where the service sends email (invitation links): an SMTP URL, `smtp://user:pass@host:587` (STARTTLS when the
   * server offers it) or `smtps://user:pass@host:465`. Unset outside production, `npm start` runs a local mail
   * catcher (MailDev) and sends there; unset in production, no email is sent (docs/security.md, "Invitations").
   */
  SMTP_URL: optionalUrl.refine(
    (v) => v === undefined || /^smtps?:$/.test(new URL(v).protocol),
    'must be smtp:// or smtps://',
  ),
  /** The sender of the service's email. */
  MAIL_FROM: z.string().default('offerkit <no-reply@offerkit.localhost>'),
  /**
   * The local mail catcher `npm start` runs while SMTP_URL is unset (development only): its SMTP and web ports; `false`
   * turns it off (invitation links are then only in the service's log).
   */
  MAIL_CATCHER: z.enum(['true', 'false', '1', '0', '']).optional(),
  MAIL_CATCHER_SMTP_PORT: port(1025),
  MAIL_CATCHER_PORT: port(1080),
  /**
   * The demo workspace: on first start `npm start` creates it with an app full of realistic data.
   * Default: on outside production.
   */
  DEMO_WORKSPACE: z.enum(['true', 'false', '1', '0', '']).optional(),
  /**
   * The example page of the drop-in components: `npm start` fills an app with what they show (the console's demo
   * workspace when there is one) and prints the page's URL. Default: on outside production.
   */
  ELEMENTS_EXAMPLE: z.enum(['true', 'false', '1', '0', '']).optional(),
});

export type Config = z.infer<typeof configSchema> & {
  dataDir: string;
  demoWorkspace: boolean;
  databaseUrl: string;
  temporalAddress: string;
  embeddedPostgres: boolean;
  embeddedTemporal: boolean;
  elementsExample: boolean;
};

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = configSchema.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`Invalid environment setting ${issue.path.join('.')}: ${issue.message}`);
  }
  const c = parsed.data;
  if (!c.TEMPORAL_TLS_CERT !== !c.TEMPORAL_TLS_KEY)
    throw new Error(
      'Invalid environment setting TEMPORAL_TLS_CERT: set TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY together',
    );
  const dataDir = path.resolve(c.DATA_DIR);
  return {
    ...c,
    // The public origin: PUBLIC_API_URL, else the URL the hosting platform gives the service.
    PUBLIC_API_URL: c.PUBLIC_API_URL ?? hostProvidedUrl(env),
    dataDir,
    demoWorkspace: c.DEMO_WORKSPACE
      ? c.DEMO_WORKSPACE === 'true' || c.DEMO_WORKSPACE === '1'
      : c.NODE_ENV !== 'production',
    elementsExample: c.ELEMENTS_EXAMPLE
      ? c.ELEMENTS_EXAMPLE === 'true' || c.ELEMENTS_EXAMPLE === '1'
      : c.NODE_ENV !== 'production',
    embeddedPostgres: !c.DATABASE_URL,
    embeddedTemporal: !c.TEMPORAL_ADDRESS,
    databaseUrl: c.DATABASE_URL ?? embeddedDatabaseUrl(c.EMBEDDED_POSTGRES_PORT),
    temporalAddress: c.TEMPORAL_ADDRESS ?? `127.0.0.1:${c.TEMPORAL_PORT}`,
  };
}

/**
 * The service's external URL as hosting platforms announce it in the environment (Render, Railway,
 * Fly.io, Heroku with dyno metadata, Vercel, Azure App Service, Koyeb); undefined elsewhere.
 */
export function hostProvidedUrl(env: NodeJS.ProcessEnv): string | undefined {
  const https = (host: string | undefined) =>
    host && host.trim()
      ? `https://${host
          .trim()
          .replace(/^https?:\/\//, '')
          .replace(/\/.*$/, '')}`
      : undefined;
  const full = env.RENDER_EXTERNAL_URL?.trim();
  if (full && URL.canParse(full)) return new URL(full).origin;
  return (
    https(env.RAILWAY_PUBLIC_DOMAIN) ??
    (env.FLY_APP_NAME?.trim() ? `https://${env.FLY_APP_NAME.trim()}.fly.dev` : undefined) ??
    https(env.HEROKU_APP_DEFAULT_DOMAIN_NAME) ??
    https(env.VERCEL_PROJECT_PRODUCTION_URL ?? env.VERCEL_URL) ??
    https(env.WEBSITE_HOSTNAME) ??
    https(env.KOYEB_PUBLIC_DOMAIN)
  );
}

export const EMBEDDED_DB = { user: 'offerkit', password: 'offerkit', database: 'offerkit' } as const;

export function embeddedDatabaseUrl(port: number): string {
  return `postgres://${EMBEDDED_DB.user}:${EMBEDDED_DB.password}@127.0.0.1:${port}/${EMBEDDED_DB.database}`;
}
