// People who sign in to the console: Better Auth (email and password, sessions in HTTP-only cookies, scrypt
// password hashes, Origin checks on every state-changing call). Better Auth knows people only: which workspace a
// person belongs to, with which role, is the service's own `workspace_members` (src/people/workspaces.ts), keyed by
// the spec's org id, which nothing renames. Nobody signs up alone: the first owner comes from the setup link (or the
// admin key), everyone else from an invitation bound to their address; Better Auth's HTTP routes are reached only
// through the three the route table serves (src/console-api/console.routes.ts).
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { ZxcvbnFactory } from '@zxcvbn-ts/core';
import { adjacencyGraphs, dictionary } from '@zxcvbn-ts/language-common';
import type { betterAuth as BetterAuth } from 'better-auth';
import pg from 'pg';
import { boundedPool, dbBounds } from '../db/bounds.js';
import type { Deps } from '../deps.js';

export const AUTH_BASE_PATH = '/api/auth';

/** Better Auth's tables, prefixed so they read as the people module's beside the service's own. */
const TABLES = {
  user: 'people_users',
  session: 'people_sessions',
  account: 'people_credentials',
  verification: 'people_verifications',
} as const;

export const MIN_PASSWORD_LENGTH = 10;

let strength: ZxcvbnFactory | undefined;

/**
 * Why a password is refused, or null: at least MIN_PASSWORD_LENGTH characters, and not guessable from common
 * passwords, names, keyboard patterns and the person's own name and address (zxcvbn's estimate must reach 10^8
 * guesses, its score 3), as NIST SP 800-63B asks instead of composition rules.
 */
export function passwordProblem(password: string, personal: string[] = []): string | null {
  if (password.length < MIN_PASSWORD_LENGTH) return `password: must be at least ${MIN_PASSWORD_LENGTH} characters`;
  strength ??= new ZxcvbnFactory({ dictionary, graphs: adjacencyGraphs });
  const r = strength.check(password.slice(0, 100), personal.filter(Boolean));
  if (r.score >= 3) return null;
  return 'password: too easy to guess (a common password, a pattern or your own name); use a few uncommon words';
}

function buildAuth(deps: Deps, pool: pg.Pool, betterAuth: typeof BetterAuth) {
  const { config } = deps;
  return betterAuth({
    appName: 'offerkit console',
    basePath: AUTH_BASE_PATH,
    // Without a configured dashboard URL the base URL follows the request, so the console works on any
    // host the API is reached at; the same-origin check below is what stops cross-site requests.
    baseURL: config.APP_URL ? new URL(config.APP_URL).origin : undefined,
    // Derived from the admin key unless set: rotating the admin key signs every person out.
    secret:
      config.CONSOLE_AUTH_SECRET ?? createHmac('sha256', deps.adminKey).update('offerkit-console-auth').digest('hex'),
    database: pool,
    trustedOrigins: (request) => {
      const origins: string[] = [];
      if (config.APP_URL) origins.push(new URL(config.APP_URL).origin);
      if (request) origins.push(new URL(request.url).origin);
      return origins;
    },
    user: { modelName: TABLES.user },
    session: { modelName: TABLES.session, expiresIn: 7 * 24 * 3600, updateAge: 24 * 3600 },
    account: { modelName: TABLES.account },
    verification: { modelName: TABLES.verification },
    emailAndPassword: {
      enabled: true,
      minPasswordLength: MIN_PASSWORD_LENGTH,
      // People join through the owner setup or an invitation (server-side calls, which this setting would refuse
      // too); the HTTP sign-up route is disabled below and not served by the route table either.
      disableSignUp: false,
    },
    disabledPaths: ['/sign-up/email'],
    // Sign-in attempts are throttled by the route table's throttle (per address and per account), on the client
    // address Koa reads (forwarded headers only under TRUST_PROXY), which is the only one Better Auth is given.
    rateLimit: { enabled: false },
    telemetry: { enabled: false },
    // Its refusals (a foreign Origin) are answers, not faults; the service's log level silences it in tests.
    logger: { level: 'error', disabled: config.LOG_LEVEL === 'silent' },
    // Better Auth's own CSRF defences stay on in every environment (it turns the origin check off when it
    // detects a test runner): Origin checked against trustedOrigins when a cookie is sent, Fetch Metadata on
    // first sign-in, so a cross-site form cannot sign a person in or out.
    advanced: { cookiePrefix: 'offerkit', disableOriginCheck: false, disableCSRFCheck: false },
  });
}

export type PeopleAuth = ReturnType<typeof buildAuth>;

export interface People {
  auth: PeopleAuth;
  pool: pg.Pool;
  close(): Promise<void>;
}

const byDeps = new WeakMap<Deps, Promise<People>>();

/** The people module for these deps: tables created on first use (Better Auth owns their shape). */
export function people(deps: Deps): Promise<People> {
  let p = byDeps.get(deps);
  if (!p) {
    p = (async () => {
      const pool = boundedPool(deps.config.databaseUrl, { max: 5, bounds: dbBounds(deps.config) });
      // An idle connection the server ended is not a crash. 57P01: PostgreSQL ended it on purpose (it is shutting
      // down, as on a Ctrl-C of `npm start`, which reaches the embedded server too, or an administrator ended it):
      // expected, so an info line without a stack; anything else is a warning.
      pool.on('error', (err) => {
        if ((err as { code?: unknown }).code === '57P01')
          deps.logger.info('people: PostgreSQL ended an idle connection; the next request opens a new one');
        else deps.logger.warn({ err }, 'people: idle database connection ended');
      });
      // Better Auth is loaded here, on the first request that needs people (about half a CPU-second): an API or
      // worker process that serves none never loads it.
      const [{ betterAuth }, { getMigrations }] = await Promise.all([
        import('better-auth'),
        import('better-auth/db/migration'),
      ]);
      const auth = buildAuth(deps, pool, betterAuth);
      const { runMigrations } = await getMigrations(auth.options);
      await runMigrations();
      await pool.query(
        `create table if not exists people_setup_tokens (token_hash text primary key, expires_at timestamptz not null)`,
      );
      await adoptOldMemberships(pool);
      return { auth, pool, close: () => pool.end() };
    })();
    p.catch(() => byDeps.delete(deps));
    byDeps.set(deps, p);
  }
  return p;
}

export async function closePeople(deps: Deps): Promise<void> {
  const p = byDeps.get(deps);
  if (!p) return;
  byDeps.delete(deps);
  await (await p).close().catch(() => undefined);
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

/**
 * Memberships kept by Better Auth's organization plugin before the service kept its own (the org was the one
 * whose id equals the organization's slug): copied once, when the service's table is still empty.
 */
async function adoptOldMemberships(pool: pg.Pool): Promise<void> {
  await pool.query(`do $$ begin
    if to_regclass('people_members') is not null and to_regclass('people_workspaces') is not null
       and not exists (select 1 from workspace_members) then
      insert into workspace_members (org_id, user_id, role, created_at)
      select o.id, m."userId", m.role, m."createdAt"
        from people_members m join people_workspaces w on w.id = m."organizationId" join orgs o on o.id = w.slug
       where m.role in ('owner', 'admin', 'member')
      on conflict do nothing;
    end if;
  end $$`);
}

/** How many people own a workspace (the setup link is offered while there is none). */
export async function countOwners(p: People): Promise<number> {
  const { rows } = await p.pool.query(
    `select count(*)::int as n from workspace_members m join ${TABLES.user} u on u.id = m.user_id where m.role = 'owner'`,
  );
  return rows[0].n;
}

/**
 * A one-time setup link's token, made while no workspace has an owner; valid 24 hours, stored hashed. Every start
 * without an owner makes a new one (the older ones stay valid until they expire or an owner exists). Returns null
 * once an owner exists.
 */
export async function issueSetupToken(p: People): Promise<string | null> {
  if ((await countOwners(p)) > 0) return null;
  const token = randomBytes(24).toString('base64url');
  await p.pool.query(
    `insert into people_setup_tokens (token_hash, expires_at) values ($1, now() + interval '24 hours')`,
    [sha256(token)],
  );
  return token;
}

/** Uses up a setup token; true when it was valid. */
export async function consumeSetupToken(p: People, token: string): Promise<boolean> {
  const { rowCount } = await p.pool.query(
    `delete from people_setup_tokens where token_hash = $1 and expires_at > now()`,
    [sha256(token)],
  );
  return (rowCount ?? 0) > 0;
}

/** Every setup token goes once an owner exists. */
export async function clearSetupTokens(p: People): Promise<void> {
  await p.pool.query(`delete from people_setup_tokens`);
}

/** The people table's name, for the modules that read it beside Better Auth. */
export const USERS_TABLE = TABLES.user;
/** Sessions and passwords, deleted with a person made through an invitation (src/people/workspaces.ts). */
export const SESSIONS_TABLE = TABLES.session;
export const CREDENTIALS_TABLE = TABLES.account;
