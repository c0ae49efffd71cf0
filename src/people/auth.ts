// People who sign in to the console: Better Auth (email and password, sessions in HTTP-only cookies,
// scrypt password hashes, Origin checks on every state-changing call) with its organization plugin.
// A Better Auth organization is a workspace; its slug is the id of the spec's org (`/orgs`), which
// holds the workspace's `app_ids` in order.
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { betterAuth } from 'better-auth';
import { getMigrations } from 'better-auth/db/migration';
import { organization } from 'better-auth/plugins';
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
  organization: 'people_workspaces',
  member: 'people_members',
  invitation: 'people_invitations',
} as const;

function buildAuth(deps: Deps, pool: pg.Pool) {
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
      minPasswordLength: 10,
      // People join through the owner setup or an invitation (server-side calls); nobody signs up alone.
      disableSignUp: false,
    },
    rateLimit: { enabled: config.NODE_ENV === 'production' },
    telemetry: { enabled: false },
    // Its refusals (a foreign Origin) are answers, not faults; the service's log level silences it in tests.
    logger: { level: 'error', disabled: config.LOG_LEVEL === 'silent' },
    // Better Auth's own CSRF defences stay on in every environment (it turns the origin check off when it
    // detects a test runner): Origin checked against trustedOrigins when a cookie is sent, Fetch Metadata on
    // first sign-in, so a cross-site form cannot sign a person in or out.
    advanced: { cookiePrefix: 'offerkit', disableOriginCheck: false, disableCSRFCheck: false },
    plugins: [
      organization({
        allowUserToCreateOrganization: false,
        schema: {
          organization: { modelName: TABLES.organization },
          member: { modelName: TABLES.member },
          invitation: { modelName: TABLES.invitation },
        },
      }),
    ],
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
      // An idle connection the server ended (a restart, a dropped test database) is not a crash.
      pool.on('error', (err) => deps.logger.warn({ err }, 'people: idle database connection ended'));
      const auth = buildAuth(deps, pool);
      const { runMigrations } = await getMigrations(auth.options);
      await runMigrations();
      await pool.query(
        `create table if not exists people_setup_tokens (token_hash text primary key, expires_at timestamptz not null)`,
      );
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

export async function countPeople(p: People): Promise<number> {
  const { rows } = await p.pool.query(`select count(*)::int as n from ${TABLES.user}`);
  return rows[0].n;
}

/**
 * A one-time setup link's token, made while nobody can sign in yet; valid 24 hours, stored hashed.
 * Returns null once someone exists.
 */
export async function issueSetupToken(p: People): Promise<string | null> {
  if ((await countPeople(p)) > 0) return null;
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

export interface Workspace {
  id: string;
  name: string;
  role: string;
  demo: boolean;
  app_ids: string[];
}

export const DEMO_WORKSPACE_ID = 'demo';

/**
 * The person's workspaces, in the order they joined, with their app ids from the spec's orgs. Every
 * person also sees the demo workspace (read-only) when there is one.
 */
export async function workspacesOf(p: People, userId: string): Promise<Workspace[]> {
  const { rows } = await p.pool.query<{ id: string; name: string; role: string; app_ids: string[] | null }>(
    `select w.slug as id, w.name, m.role, o.app_ids
       from ${TABLES.member} m
       join ${TABLES.organization} w on w.id = m."organizationId"
       left join orgs o on o.id = w.slug
      where m."userId" = $1
      order by m."createdAt", w.slug`,
    [userId],
  );
  const list: Workspace[] = rows.map((r) => ({
    id: r.id,
    name: r.name,
    role: r.role,
    demo: r.id === DEMO_WORKSPACE_ID,
    app_ids: r.app_ids ?? [],
  }));
  if (!list.some((w) => w.demo)) {
    const demo = await p.pool.query<{ name: string | null; app_ids: string[] }>(
      `select name, app_ids from orgs where id = $1`,
      [DEMO_WORKSPACE_ID],
    );
    if (demo.rows[0])
      list.push({
        id: DEMO_WORKSPACE_ID,
        name: demo.rows[0].name ?? 'Demo',
        role: 'viewer',
        demo: true,
        app_ids: demo.rows[0].app_ids,
      });
  }
  return list;
}

/** Creates a workspace: the Better Auth organization (with `ownerId` as owner) and the spec's org row. */
export async function createWorkspace(
  p: People,
  input: { id: string; name: string; ownerId: string; appIds?: string[] },
): Promise<void> {
  await p.pool.query(
    `insert into orgs (id, name, app_ids, created_at, updated_at) values ($1, $2, $3, now(), now())
     on conflict (id) do nothing`,
    [input.id, input.name, JSON.stringify(input.appIds ?? [])],
  );
  await p.auth.api.createOrganization({ body: { name: input.name, slug: input.id, userId: input.ownerId } });
}
