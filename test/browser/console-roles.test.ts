// The console shows each person only what the server lets their role do. A viewer, a member, an admin and an owner
// each walk every page of one app, the new-app page and the MCP consent page in Chromium; every request the page
// makes is matched to the route table and checked against the role that route declares (the guard's own rule,
// `requiredRole`), every control that names its route (`data-route`) is checked the same way, and every other button
// on the page is pressed (a dialog's confirm too) while the walk answers writes itself, so nothing changes and
// anything shown that the server would refuse is found (up to admin: an owner may do everything, so the owner's walk
// reads without pressing). The consent page offers the levels the role may approve.
import { expect } from 'chai';
import { type BrowserContext, type Page, type Route } from 'playwright-core';
import { LEVEL_CEILING, LEVELS } from '../../src/console-api/consent.routes.js';
import { requiredRole, roleAtLeast, writes } from '../../src/http/guard.js';
import type { Role, RouteDef } from '../../src/http/route.js';
import { CONSOLE_API, servedToPeople } from '../../src/http/router.js';
import { people } from '../../src/people/better-auth.js';
import { addAppToWorkspace, createWorkspace } from '../../src/people/workspaces.js';
import { routes } from '../../src/routes.js';
import { openBrowser, type FileBrowser } from '../helpers/browser.js';
import { ensureConsoleBuilt, shoot } from '../helpers/console.js';
import { billingApp, createAccount, type TestApp } from '../helpers/factories.js';
import { call, post } from '../helpers/http.js';
import { mcpPost, mcpUrl } from '../helpers/mcp.js';
import { openAuthorization, pkce, REDIRECT } from '../helpers/oauth.js';
import { startReceiver } from '../helpers/receiver.js';
import { testEnv } from '../helpers/servers.js';

const PASSWORD = 'correct horse battery staple';
const ROLES: Role[] = ['viewer', 'member', 'admin', 'owner'];

/** The route table as the browser reaches it: each path a person's request may take, as a pattern. */
const TABLE: { method: string; pattern: RegExp; def: RouteDef }[] = routes.flatMap((def) => {
  const paths = [
    ...(def.path.startsWith(`${CONSOLE_API}/`) || def.path.startsWith('/api/auth/') ? [def.path] : []),
    ...(servedToPeople(def) ? [`${CONSOLE_API}${def.path}`] : []),
  ];
  return paths.map((p) => ({
    method: def.method,
    pattern: new RegExp(`^${p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[A-Za-z]+/g, '[^/]+')}$`),
    def,
  }));
});

/** The route a request takes: static segments win over parameters, as the router's own matching does. */
function routeOf(method: string, path: string): RouteDef | null {
  const found = TABLE.filter((r) => r.method === method && r.pattern.test(path));
  found.sort(
    (a, b) => (b.def.path.match(/\/[^:/][^/]*/g)?.length ?? 0) - (a.def.path.match(/\/[^:/][^/]*/g)?.length ?? 0),
  );
  return found[0]?.def ?? null;
}

const PAGES = [
  '',
  '/catalog',
  '/accounts',
  '/accounts/acct_1',
  '/analytics',
  '/payments',
  '/offers',
  '/offers/launch',
  '/billing',
  '/cancel-flows',
  '/webhooks',
  '/webhooks?tab=events',
  '/webhooks?tab=types',
  '/mcp',
];

describe('each role sees only what the server lets it do, on every console page (Chromium)', function () {
  this.timeout(20 * 60_000);
  let browser: FileBrowser;
  let app: TestApp;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  const org = `roles_${Date.now()}`;
  const made: string[] = [];
  const cookies = {} as Record<Role, string>;

  before(async function () {
    this.timeout(15 * 60_000);
    ensureConsoleBuilt();
    // An app with something on every page: a catalog, accounts with usage, an offer published and a checkout left
    // open, a cancel flow, a saved report, a webhook endpoint with a failed delivery, a key's MCP session, and a
    // pending invitation among the workspace's people.
    receiver = await startReceiver(() => ({ status: 500, body: 'down' }));
    ({ app } = await billingApp({
      accounts: [{ id: 'acct_1', plan: 'pro' }],
      offer: { id: 'launch', name: 'Launch', plans: [{ plan: 'pro', prices: [{ interval: 'month', amount: 19 }] }] },
    }));
    const base = `/apps/${app.id}`;
    await createAccount(app, { id: 'acct_2', plan: 'free' });
    const used = await post(`${base}/namespaces/acct_1/usage/api_calls/add`, app.api_key);
    expect(used.status, used.text).to.be.oneOf([200, 201]);
    const checkout = await post(`${base}/offers/launch/checkout`, app.public_key, {
      plan: 'pro',
      interval: 'month',
      account: 'acct_2',
    });
    expect(checkout.status, checkout.text).to.equal(201);
    // A credits pool with a top-up pack: the catalog's packs show their create, archive and delete by role.
    expect(
      (await post(`${base}/entitlements`, app.api_key, { id: 'credits', type: 'credits', name: 'Credits' })).status,
    ).to.equal(201);
    const pack = await post(`${base}/credit-packs`, app.api_key, {
      id: 'boost',
      pool: 'credits',
      amount: 100,
      price: 5,
    });
    expect(pack.status, pack.text).to.equal(201);
    expect((await post(`${base}/cancel-flows`, app.api_key, {})).status).to.equal(201);
    expect((await post(`${base}/analytics/reports`, app.api_key, { name: 'Calls' })).status).to.equal(201);
    const hook = await post(`${base}/webhooks`, app.api_key, { url: receiver.url, events: ['*'] });
    expect(hook.status, hook.text).to.equal(201);
    await post(`${base}/webhooks/${hook.body.id}/test`, app.api_key, {});
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'walk', version: '1' } },
    };
    expect((await mcpPost(app.id, init, app.api_key)).status).to.equal(200);
    // OAuth connections may have any level on this app, so the consent page offers each role its own ceiling.
    const opened = await call('PATCH', `${base}/mcp/settings`, {
      token: testEnv().adminKey,
      body: { access_level: 'full' },
    });
    expect(opened.status, opened.text).to.equal(200);

    const p = await people(testEnv().deps);
    for (const role of [...ROLES].reverse()) {
      const email = `walk-${role}-${Date.now()}@example.com`;
      const { user } = await p.auth.api.signUpEmail({ body: { name: `Walking ${role}`, email, password: PASSWORD } });
      made.push(user.id);
      if (role === 'owner') {
        await createWorkspace(p, { id: org, name: 'Role walk', ownerId: user.id });
        await addAppToWorkspace(p, org, app.id);
      } else
        await p.pool.query(`insert into workspace_members (org_id, user_id, role) values ($1, $2, $3)`, [
          org,
          user.id,
          role,
        ]);
      const res = await call('POST', '/api/auth/sign-in/email', {
        body: { email, password: PASSWORD },
        headers: { Origin: testEnv().baseUrl },
      });
      expect(res.status, res.text).to.equal(200);
      cookies[role] = res.headers
        .getSetCookie()
        .map((c) => c.split(';')[0])
        .join('; ');
    }
    const invited = await call('POST', `/console/api/workspaces/${org}/invitations`, {
      body: { email: `walk-invited-${Date.now()}@example.com`, role: 'viewer' },
      headers: { Cookie: cookies.owner, Origin: testEnv().baseUrl },
    });
    expect(invited.status, invited.text).to.equal(201);
    browser = await openBrowser();
  });

  after(async () => {
    await browser?.close();
    await receiver?.close();
    const p = await people(testEnv().deps);
    await p.pool.query(`delete from workspace_invitations where org_id = $1`, [org]);
    await p.pool.query(`delete from workspace_members where org_id = $1`, [org]);
    await p.pool.query(`delete from orgs where id = $1`, [org]);
    for (const table of ['people_sessions', 'people_credentials'])
      await p.pool.query(`delete from ${table} where "userId" = any($1)`, [made]);
    await p.pool.query(`delete from people_users where id = any($1)`, [made]);
  });

  for (const role of ROLES) {
    const who = `${['admin', 'owner'].includes(role) ? 'an' : 'a'} ${role}`;
    it(`${who}: no control or request the server would refuse, on any page`, async () => {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const refusals: string[] = [];
      const seen = { requests: 0, routes: new Set<string>(), pressed: 0, shown: new Set<string>() };
      let where = '';
      await signIn(context, cookies[role]);
      await context.route(`${testEnv().baseUrl}/**`, (r) => check(r, role, where, refusals, seen));
      const page = await context.newPage();
      try {
        for (const suffix of PAGES) {
          where = suffix || '/';
          const url = `${testEnv().baseUrl}/console/apps/${app.id}${suffix}`;
          await open(page, url);
          await expandAll(page);
          // What a viewer is shown of the app's home and of an endpoint, and a member of the endpoint.
          if (
            (role === 'viewer' && ['', '/webhooks'].includes(suffix)) ||
            (role === 'member' && suffix === '/webhooks')
          )
            await shoot(page, `roles-${role}${suffix.replace('/', '-')}`);
          refusals.push(...(await namedControls(page, role, seen.shown)).map((r) => `${where}: ${r}`));
          // An owner may do everything, so pressing would find no refusal: the owner's walk reads the pages, their
          // requests and the controls they name (the admin's pressing covers the same buttons but the owner's few).
          if (role !== 'owner') seen.pressed += await pressEverything(page, url, role, refusals, () => where);
        }
        // The workspace's page outside any app: a new app (owners and admins; the others are told who may).
        where = '/new-app';
        const newApp = `${testEnv().baseUrl}/console/new-app`;
        await open(page, newApp);
        refusals.push(...(await namedControls(page, role, seen.shown)).map((r) => `${where}: ${r}`));
        if (role !== 'owner') seen.pressed += await pressEverything(page, newApp, role, refusals, () => where);
        // The MCP consent page: the levels offered are those the server lets this role approve, and approving
        // sends what the walk checks against the table.
        where = '/oauth/consent';
        await page.goto(
          `${testEnv().baseUrl}/console/oauth/consent?request=${encodeURIComponent(await authorizationRequest())}`,
        );
        const approve = page.getByRole('button', { name: 'Approve' });
        await approve.waitFor();
        const offered = await page.getByRole('radio').evaluateAll((els) => els.map((e) => e.getAttribute('value')));
        expect(offered, `levels offered to a ${role}`).to.deep.equal(
          LEVELS.slice(0, LEVELS.indexOf(LEVEL_CEILING[role]) + 1),
        );
        await approve.click();
        await settle(page);
        expect(seen.routes.has('console.approveOAuthRequest')).to.equal(true);
      } finally {
        await context.close();
      }
      expect(refusals, refusals.join('\n')).to.deep.equal([]);
      // The walk did walk: every page read through the table, and buttons pressed.
      expect(seen.routes.size, [...seen.routes].join(' ')).to.be.greaterThan(20);
      process.stderr.write(`role walk: ${role} pressed ${seen.pressed}, ${seen.requests} requests\n`);
      if (role !== 'owner') expect(seen.pressed).to.be.greaterThan(5);
      // Each role is offered what it may: the signing secret's reveal from member on, the secret key's and the
      // payment connection from admin on, deleting the app to the owner; a credit pack's create, archive and delete
      // from member on.
      for (const action of [
        'console.revealWebhookSecret',
        'console.revealSecretKey',
        'payments.connect',
        'apps.delete',
        'console.createApp',
        'creditPacks.create',
        'creditPacks.archive',
        'creditPacks.delete',
      ]) {
        const def = routes.find((r) => r.sdk === action)!;
        expect(seen.shown.has(action), `${action} offered to a ${role}`).to.equal(roleAtLeast(role, requiredRole(def)));
      }
    });
  }

  /** A pending MCP authorization request for the app, as an outside client starts one: its id. */
  async function authorizationRequest(): Promise<string> {
    const client = await post('/oauth/register', null, { redirect_uris: [REDIRECT], client_name: 'Role walk' });
    expect(client.status, client.text).to.equal(201);
    const authorize = new URL(`${testEnv().baseUrl}/oauth/authorize`);
    for (const [k, v] of Object.entries({
      response_type: 'code',
      client_id: client.body.client_id as string,
      redirect_uri: REDIRECT,
      code_challenge: pkce().challenge,
      code_challenge_method: 'S256',
      scope: 'mcp:full',
      resource: mcpUrl(app.id).toString(),
    }))
      authorize.searchParams.set(k, v);
    return openAuthorization(authorize);
  }

  /** The person's session in the browser. */
  async function signIn(context: BrowserContext, cookie: string) {
    await context.addCookies(
      cookie.split('; ').map((c) => {
        const i = c.indexOf('=');
        return { name: c.slice(0, i), value: c.slice(i + 1), url: testEnv().baseUrl };
      }),
    );
  }

  /**
   * Every request the page sends to the service: matched to its route, refused by the walk's check when the person's
   * role is below the route's; a write is answered by the walk (409, nothing changed), a read goes through.
   */
  async function check(
    r: Route,
    role: Role,
    where: string,
    refusals: string[],
    seen: { requests: number; routes: Set<string> },
  ) {
    const request = r.request();
    const { pathname } = new URL(request.url());
    const api = pathname.startsWith(`${CONSOLE_API}/`) || pathname.startsWith('/api/auth/');
    if (!api) return r.continue();
    seen.requests++;
    const def = routeOf(request.method(), pathname);
    if (!def) {
      refusals.push(`${where}: ${request.method()} ${pathname} matches no route`);
      return r.abort();
    }
    seen.routes.add(def.sdk);
    const least = requiredRole(def);
    if (!roleAtLeast(role, least))
      refusals.push(`${where}: ${request.method()} ${pathname} (${def.sdk}) takes ${least}, sent as a ${role}`);
    if (writes(def) && !def.path.startsWith('/api/auth/'))
      return r.fulfill({ status: 409, json: { error: 'The role walk answers writes itself: nothing changed' } });
    return r.continue();
  }
});

/** Requests in flight per page (the walk waits for a page to be quiet before looking at it). */
const inFlight = new WeakMap<Page, number>();

/** Opens a page and waits until it has loaded what it shows. */
async function open(page: Page, url: string) {
  if (!inFlight.has(page)) {
    inFlight.set(page, 0);
    const add = (n: number) => inFlight.set(page, (inFlight.get(page) ?? 0) + n);
    page.on('request', () => add(1));
    page.on('requestfinished', () => add(-1));
    page.on('requestfailed', () => add(-1));
  }
  const here = page.url();
  if (here !== url && here.startsWith(`${testEnv().baseUrl}/console/`) && !(await page.getByRole('dialog').count())) {
    // Another page of the console, as a link takes a person there: the router draws it and fetches its data, the
    // shell stays. A full load costs Chromium about half a CPU-second (the bundle, the styles, the whole tree) and
    // the walk opens a page some 150 times; the first page of each role is a full load.
    const { pathname, search } = new URL(url);
    await page.evaluate((to) => {
      history.pushState(null, '', to);
      dispatchEvent(new PopStateEvent('popstate'));
    }, pathname + search);
  } else await page.goto(url);
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  await settle(page);
}

/** Quiet: no request in flight for a moment, and no loading spinner. */
async function settle(page: Page) {
  let quiet = 0;
  for (let waited = 0; quiet < 3 && waited < 10_000; waited += 50) {
    await page.waitForTimeout(50);
    // The spinner by its attribute: a label lookup walks every element's labels, 20 times a second.
    quiet =
      (inFlight.get(page) ?? 0) <= 0 && (await page.locator('[aria-label="Loading"]').count()) === 0 ? quiet + 1 : 0;
  }
}

/** Opens every accordion of the page (an endpoint's actions, a delivery, an event), nested ones too. */
async function expandAll(page: Page) {
  // A few of each level: an endpoint's actions and one delivery, not every event of the log.
  for (let round = 0; round < 2; round++) {
    const closed = page.locator('main [data-accordion-control][aria-expanded="false"]');
    const n = Math.min(await closed.count(), 4);
    if (!n) return;
    for (let i = 0; i < n; i++)
      await closed
        .first()
        .click({ timeout: 2000 })
        .catch(() => undefined);
    await settle(page);
  }
}

/** Controls that name their route: each one shown and usable must be one the role may use. */
async function namedControls(page: Page, role: Role, shown?: Set<string>): Promise<string[]> {
  const named: { route: string; text: string }[] = await page.$$eval('[data-route]', (els) =>
    els
      .filter((e) => {
        const r = e.getBoundingClientRect();
        return r.width > 0 && r.height > 0 && !(e as HTMLButtonElement).disabled && !e.closest('fieldset:disabled');
      })
      .map((e) => ({ route: e.getAttribute('data-route')!, text: (e.textContent ?? '').trim().slice(0, 40) })),
  );
  const problems: string[] = [];
  for (const { route, text } of named) {
    shown?.add(route);
    const def = routes.find((r) => r.sdk === route);
    if (!def) problems.push(`"${text}" names ${route}, which is no route`);
    else if (!roleAtLeast(role, requiredRole(def)))
      problems.push(`"${text}" (${route}) is shown to a ${role}; it takes ${requiredRole(def)}`);
  }
  // A form's submit button is a write: it names its route.
  const unnamed: string[] = await page.$$eval('main button[type="submit"]:not([data-route])', (els) =>
    els
      .filter((e) => e.getBoundingClientRect().width > 0 && !(e as HTMLButtonElement).disabled)
      .map((e) => (e.textContent ?? '').trim()),
  );
  problems.push(...unnamed.map((t) => `submit button "${t}" names no route`));
  return problems;
}

/**
 * Presses every button of the page's main part that names no route, once per kind, and the last button of any dialog
 * that opens (its confirm), each press then checked by `check` on the requests it makes. Closes what opened and comes
 * back to the page.
 */
async function pressEverything(
  page: Page,
  url: string,
  role: Role,
  refusals: string[],
  where: () => string,
): Promise<number> {
  let pressed = 0;
  const done = new Set<string>();
  // Buttons that name their route are held to the table by `namedControls`; the others are pressed, so that one
  // which calls the server without saying so is still caught by `check`.
  const selector = 'main button:not([disabled]):not([data-accordion-control]):not([data-route])';
  for (let i = 0; i < 80; i++) {
    // Each button by what it is (its text and route), in one look at the page.
    const keys: (string | null)[] = await page.$$eval(selector, (els) =>
      els.map((e) => {
        const r = e.getBoundingClientRect();
        if (r.width === 0 || r.height === 0 || e.closest('fieldset:disabled')) return null;
        const text = (e.textContent ?? '').trim();
        if (/^(Copy|Copied)/.test(text)) return null; // the clipboard, not the service
        // One press per kind of button: a row's Edit stands for every row's (the same component).
        return `${text}|${e.getAttribute('data-route') ?? ''}`;
      }),
    );
    const index = keys.findIndex((k) => k !== null && !done.has(k));
    const next = index < 0 ? null : { index, key: keys[index]! };
    if (!next) break;
    done.add(next.key);
    await page
      .locator(selector)
      .nth(next.index)
      .click({ timeout: 3000 })
      .catch(() => undefined);
    pressed++;
    await settle(page);
    const dialog = page.getByRole('dialog');
    if (await dialog.count()) {
      refusals.push(...(await namedControls(page, role)).map((r) => `${where()} (dialog): ${r}`));
      // The dialog's own action is its last button (Cancel or "Keep it" come first).
      const inside = dialog.last().locator('button:not([disabled])');
      const count = await inside.count();
      if (count > 1) {
        await inside
          .nth(count - 1)
          .click({ timeout: 3000 })
          .catch(() => undefined);
        pressed++;
        await settle(page);
      }
      await page.keyboard.press('Escape');
      await settle(page);
    }
    if (page.url() !== url || (await page.getByRole('dialog').count()))
      await open(page, url).then(() => expandAll(page));
  }
  return pressed;
}
