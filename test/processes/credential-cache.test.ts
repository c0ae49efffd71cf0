import { expect } from 'chai';
import { Writable } from 'node:stream';
import pg from 'pg';
import { pino } from 'pino';
import { sql } from '../../src/db/sql.js';
import { loadApp } from '../../src/http/credentials.js';
import { ACK_CHANNEL, APPS_CHANNEL, CredentialCache, LISTENER_LOCK } from '../../src/http/credential-cache.js';
import { createLogger } from '../../src/logger.js';
import { createAccount, seedCatalog, type TestApp } from '../helpers/factories.js';
import { serviceEnv, startApi, stopped, waitForListening, type Started } from '../helpers/processes.js';
import { call } from '../helpers/http.js';
import { freePort, testEnv } from '../helpers/servers.js';

const em = () => testEnv().deps.orm.em.fork();

/** Backend pids of the connections listening for app changes (each holds the shared listener lock). */
async function listeners(): Promise<number[]> {
  const rows = await sql<{ pid: number }>(
    em(),
    `select pid from pg_locks where locktype = 'advisory' and granted and classid = $1 and objid = $2 and
       objsubid = 2 and database = (select oid from pg_database where datname = current_database()) order by pid`,
    [...LISTENER_LOCK],
  );
  return rows.map((r) => r.pid);
}

async function until(cond: () => Promise<boolean>, what: string, ms = 20_000) {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Changes a key behind every cache's back: the trigger is off inside this one transaction, so no notification. */
async function silentlySetKey(appId: string, key: string) {
  await em().transactional(async (t) => {
    await sql(t, 'alter table apps disable trigger apps_changed');
    await sql(t, 'update apps set api_key = $2 where id = $1', [appId, key]);
    await sql(t, 'alter table apps enable trigger apps_changed');
  });
}

describe('credential cache across two API processes', function () {
  this.timeout(180_000);
  const ADMIN = 'adm_credential_cache';
  const procs: Started[] = [];
  let a: string;
  let b: string;

  before(async function () {
    this.timeout(120_000);
    const ports = [await freePort(), await freePort()];
    const env = (port: number) =>
      serviceEnv(port, {
        ADMIN_API_KEY: ADMIN,
        // Old keys are sent on purpose after each rotation (401 each time, never a guess to lock out).
        AUTH_FAILURE_LIMIT: '0',
        CREDENTIAL_CACHE_TTL_SECONDS: '600',
      });
    procs.push(startApi(env(ports[0])), startApi(env(ports[1])));
    [a, b] = ports.map((p) => `http://127.0.0.1:${p}`);
    for (const p of procs) await waitForListening(p);
  });
  after(async () => {
    await Promise.all(procs.map((p) => stopped(p.child)));
  });

  const newApp = async (): Promise<TestApp> => {
    const res = await call('POST', '/apps', { base: a, token: ADMIN, body: { name: 'cached' } });
    expect(res.status, res.text).to.equal(201);
    return res.body;
  };
  const status = async (base: string, path: string, token: string) => (await call('GET', path, { base, token })).status;

  it('each process listens on a connection of its own once it has served a request', async () => {
    const before = await listeners();
    const app = await newApp();
    expect(await status(a, `/apps/${app.id}`, app.api_key)).to.equal(200);
    expect(await status(b, `/apps/${app.id}`, app.api_key)).to.equal(200);
    await until(async () => (await listeners()).length === before.length + 2, 'two more listeners');
  });

  it('entries are really used: a key changed behind the caches still works in both processes', async () => {
    const app = await newApp();
    for (const base of [a, b]) expect(await status(base, `/apps/${app.id}`, app.api_key)).to.equal(200);
    await silentlySetKey(app.id, 'key_changed_silently_0000000000000000');
    for (const base of [a, b]) expect(await status(base, `/apps/${app.id}`, app.api_key)).to.equal(200);
  });

  it('a regenerated secret key fails at once in the other process, and so do its account tokens', async () => {
    const app = await newApp();
    await seedCatalog(app);
    await createAccount(app, { id: 'acct', plan: 'free' });
    let key = app.api_key;
    for (let i = 0; i < 10; i++) {
      const [here, there] = i % 2 ? [b, a] : [a, b];
      const token = (await call('POST', `/apps/${app.id}/namespaces/acct/token`, { base: here, token: key })).body
        .token as string;
      // Both processes have the app cached.
      for (const base of [a, b]) {
        expect(await status(base, `/apps/${app.id}`, key)).to.equal(200);
        expect(await status(base, `/apps/${app.id}/namespaces/acct/plan`, token)).to.equal(200);
      }
      const res = await call('POST', `/apps/${app.id}/keys/regenerate`, { base: here, token: key });
      expect(res.status, res.text).to.equal(200);
      // No wait: the answer came after every process dropped the app.
      expect(await status(there, `/apps/${app.id}`, key), `old key on the other process (round ${i})`).to.equal(401);
      expect(await status(there, `/apps/${app.id}/namespaces/acct/plan`, token)).to.equal(401);
      expect(await status(here, `/apps/${app.id}`, key)).to.equal(401);
      key = res.body.api_key;
      expect(await status(there, `/apps/${app.id}`, key)).to.equal(200);
    }
  });

  it('a regenerated publishable key fails at once in the other process', async () => {
    const app = await newApp();
    const pricing = `/apps/${app.id}/plans/pricing`;
    for (const base of [a, b]) expect(await status(base, pricing, app.public_key)).to.equal(200);
    const res = await call('POST', `/apps/${app.id}/public-key/regenerate`, { base: b, token: app.api_key });
    expect(res.status).to.equal(200);
    expect(await status(a, pricing, app.public_key)).to.equal(401);
    expect(await status(a, pricing, res.body.public_key)).to.equal(200);
  });

  it('a deleted app fails at once in the other process; a renamed one reads renamed there', async () => {
    const app = await newApp();
    for (const base of [a, b]) expect(await status(base, `/apps/${app.id}`, app.api_key)).to.equal(200);
    const renamed = await call('PATCH', `/apps/${app.id}`, { base: a, token: app.api_key, body: { name: 'renamed' } });
    expect(renamed.status).to.equal(200);
    expect((await call('GET', `/apps/${app.id}`, { base: b, token: app.api_key })).body.name).to.equal('renamed');
    expect((await call('DELETE', `/apps/${app.id}`, { base: b, token: app.api_key })).status).to.equal(200);
    expect(await status(a, `/apps/${app.id}`, app.api_key)).to.equal(401);
  });

  it('a listener that lost its connection empties its cache when it listens again (a notification may be lost)', async () => {
    const app = await newApp();
    for (const base of [a, b]) expect(await status(base, `/apps/${app.id}`, app.api_key)).to.equal(200);
    // No notification is sent for this change: as if it was sent while the listeners were away.
    await silentlySetKey(app.id, 'key_lost_notification_000000000000000');
    for (const base of [a, b]) expect(await status(base, `/apps/${app.id}`, app.api_key)).to.equal(200);
    const old = await listeners();
    await sql(em(), 'select pg_terminate_backend(pid) from unnest($1::int[]) as pid', [old]);
    await until(async () => {
      const now = await listeners();
      return now.length >= old.length && now.every((p) => !old.includes(p));
    }, 'every listener back on a new connection');
    for (const base of [a, b]) {
      expect(await status(base, `/apps/${app.id}`, app.api_key)).to.equal(401);
      expect(await status(base, `/apps/${app.id}`, 'key_lost_notification_000000000000000')).to.equal(200);
    }
    // And the cache works again afterwards.
    await silentlySetKey(app.id, 'key_second_change_00000000000000000000');
    for (const base of [a, b])
      expect(await status(base, `/apps/${app.id}`, 'key_lost_notification_000000000000000')).to.equal(200);
  });

  it('a listener that does not confirm in time has its connection ended; the change still answers', async () => {
    const app = await newApp();
    const stuck = new pg.Client({ connectionString: testEnv().config.databaseUrl });
    let ended = false;
    stuck.on('error', () => (ended = true));
    stuck.on('end', () => (ended = true));
    await stuck.connect();
    try {
      // Listens and holds the lock like a process, but never answers.
      await stuck.query(`listen ${APPS_CHANNEL}`);
      await stuck.query('select pg_advisory_lock_shared($1, $2)', [...LISTENER_LOCK]);
      const res = await call('POST', `/apps/${app.id}/keys/regenerate`, { base: a, token: app.api_key });
      expect(res.status).to.equal(200);
      await until(async () => ended, 'the stuck listener ended');
      // The process logged it before ending the connection, but its stdout reaches this one through a pipe,
      // which may deliver after the connection's end.
      await until(
        async () => procs[0].output().includes('did not confirm a change in time'),
        'the process logged the listener it ended',
      );
    } finally {
      await stuck.end().catch(() => undefined);
    }
  });
});

describe('credential cache (one process, direct)', () => {
  const logger = createLogger('silent');
  const newCache = (ttlMs: number) =>
    new CredentialCache({ databaseUrl: testEnv().config.databaseUrl, ttlMs, maxApps: 2, confirmMs: 2000, logger });
  const appRow = async () => {
    const res = await call('POST', '/apps', { token: testEnv().adminKey, body: { name: 'direct' } });
    return res.body as TestApp;
  };

  it('entries expire after the TTL (the safety net)', async () => {
    const cache = newCache(300);
    try {
      const app = await appRow();
      let loads = 0;
      const load = () => (loads++, loadApp(em(), app.id));
      await cache.start();
      await cache.app(app.id, load);
      await cache.app(app.id, load);
      expect(loads).to.equal(1);
      await new Promise((r) => setTimeout(r, 350));
      await cache.app(app.id, load);
      expect(loads).to.equal(2);
    } finally {
      await cache.close();
    }
  });

  it('keeps at most maxApps, dropping the least recently used', async () => {
    const cache = newCache(60_000);
    try {
      const apps = [await appRow(), await appRow(), await appRow()];
      let loads = 0;
      const get = (i: number) => cache.app(apps[i].id, () => (loads++, loadApp(em(), apps[i].id)));
      await cache.start();
      await get(0);
      await get(1);
      await get(0); // 0 is now the most recent
      await get(2); // drops 1
      expect(loads).to.equal(3);
      await get(0);
      expect(loads).to.equal(3);
      await get(1);
      expect(loads).to.equal(4);
    } finally {
      await cache.close();
    }
  });

  it('a read that raced a change is not kept (the old record cannot come back)', async () => {
    const cache = newCache(60_000);
    try {
      const app = await appRow();
      await cache.start();
      let loads = 0;
      // The first read returns the record from before the change, after the change's notification arrived.
      const racing = async () => {
        loads++;
        const before = await loadApp(em(), app.id);
        const res = await call('POST', `/apps/${app.id}/keys/regenerate`, { token: app.api_key });
        expect(res.status).to.equal(200); // answered after this cache (a listener too) confirmed
        return before;
      };
      const first = await cache.app(app.id, racing);
      expect(first!.apiKey).to.equal(app.api_key);
      const second = await cache.app(app.id, () => (loads++, loadApp(em(), app.id)));
      expect(loads).to.equal(2);
      expect(second!.apiKey).to.not.equal(app.api_key);
    } finally {
      await cache.close();
    }
  });

  it('does not cache while it is not listening, and kept records are frozen', async () => {
    const cache = newCache(60_000);
    try {
      const app = await appRow();
      let loads = 0;
      const load = () => (loads++, loadApp(em(), app.id));
      await cache.app(app.id, load); // starts listening in the background, reads through meanwhile
      await cache.start();
      await cache.app(app.id, load);
      const kept = await cache.app(app.id, load);
      expect(loads).to.equal(2);
      expect(Object.isFrozen(kept)).to.equal(true);
    } finally {
      await cache.close();
    }
  });

  it('answers every change it hears on the acknowledgement channel with its own backend pid', async () => {
    const cache = newCache(60_000);
    const probe = new pg.Client({ connectionString: testEnv().config.databaseUrl });
    await probe.connect();
    try {
      await cache.start();
      const acks: { payload?: string; processId: number }[] = [];
      probe.on('notification', (m) => acks.push(m));
      await probe.query(`listen ${ACK_CHANNEL}`);
      await probe.query('select pg_notify($1, $2)', [APPS_CHANNEL, 'app_none 1']);
      await until(async () => acks.some((m) => m.payload === 'app_none 1'), 'an answer');
      const pids = await listeners();
      expect(pids).to.include(acks.find((m) => m.payload === 'app_none 1')!.processId);
    } finally {
      await probe.end();
      await cache.close();
    }
  });

  it('a listener PostgreSQL ends on purpose (a shutdown, pg_terminate_backend) is an info line, not a warning', async () => {
    const records: { level: number; msg: string }[] = [];
    const capture = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) records.push(JSON.parse(line));
        done();
      },
    });
    const cache = new CredentialCache({
      databaseUrl: testEnv().config.databaseUrl,
      ttlMs: 60_000,
      maxApps: 2,
      confirmMs: 2000,
      logger: pino({ level: 'info' }, capture),
    });
    try {
      const before = await listeners();
      await cache.start();
      const mine = (await listeners()).filter((p) => !before.includes(p));
      expect(mine).to.have.length(1);
      await sql(em(), 'select pg_terminate_backend($1)', [mine[0]]);
      await until(async () => (await listeners()).some((p) => !before.includes(p) && p !== mine[0]), 'listening again');
      expect(records.map((r) => [r.level, r.msg])).to.deep.equal([
        [30, 'credential cache: PostgreSQL ended the listener connection; not caching until it is back'],
      ]);
    } finally {
      await cache.close();
    }
  });
});
