// Analytics over history the roll-up has not reached yet (issue 39, item 8): a year imported into a new app answers
// within the statement bound by saying when it will be ready (503 with Retry-After), the import starts the app's
// roll-up, and once it has run the same request answers from it. The limit of rows read from the history is lowered
// for the test (ANALYTICS_UNROLLED_ROWS_MAX), so a few thousand rows stand for millions.
import { WorkflowNotFoundError } from '@temporalio/client';
import { expect } from 'chai';
import { sql } from '../../src/db/sql.js';
import { usageRollupAppWorkflowId } from '../../workflows/shared.js';
import { seededApp } from '../helpers/factories.js';
import { get, post } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

const HOUR = 3_600_000;

/** Whether the app's own roll-up run was asked for: its start waiting in the outbox, or the workflow there. */
async function rollupAskedFor(appId: string): Promise<boolean> {
  const id = usageRollupAppWorkflowId(appId);
  const rows = await sql<{ n: string }>(
    testEnv().deps.orm.em.fork(),
    'select count(*) as n from outbox where workflow_id = $1',
    [id],
  );
  if (Number(rows[0].n) > 0) return true;
  try {
    await testEnv().deps.temporal.client.workflow.getHandle(id).describe();
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

describe('analytics over history the roll-up has not reached', function () {
  this.timeout(120_000);
  let saved: number;
  before(() => {
    saved = testEnv().deps.config.ANALYTICS_UNROLLED_ROWS_MAX;
    testEnv().deps.config.ANALYTICS_UNROLLED_ROWS_MAX = 1000;
  });
  after(() => {
    testEnv().deps.config.ANALYTICS_UNROLLED_ROWS_MAX = saved;
  });

  it('a year just imported: 503 with Retry-After at once, one account answers, and the import starts the roll-up', async () => {
    const { app } = await seededApp({ accounts: Array.from({ length: 10 }, (_, i) => ({ id: `acct-${i}` })) });
    const now = Date.now();
    // 3,000 calls over the last year, none in the last 4 hours (the roll-up's normal lag is read raw anyway).
    const usage = Array.from({ length: 3000 }, (_, i) => ({
      account_id: `acct-${i % 10}`,
      entitlement_id: 'api_calls',
      amount: 1,
      created_at: new Date(now - 4 * HOUR - i * ((365 * 24 * HOUR - 5 * HOUR) / 3000)).toISOString(),
    }));
    // No worker: the roll-up the import starts cannot run yet, so the answer before it is seen for certain.
    await testEnv().stopWorker();
    try {
      const imported = await post(`/apps/${app.id}/import`, testEnv().adminKey, { usage });
      expect(imported.status, imported.text).to.equal(201);
      expect(await rollupAskedFor(app.id), 'the import itself asks for the roll-up').to.equal(true);
      const refused = await get(`/apps/${app.id}/analytics/timeseries?interval=year`, app.api_key);
      expect(refused.status, refused.text).to.equal(503);
      expect(Number(refused.headers.get('retry-after'))).to.be.within(10, 3600);
      expect(refused.body.error).to.match(/Not ready yet: .* roll-up .*retry in about \d+ seconds/);
      for (const p of ['/analytics?interval=alltime', '/analytics/top-namespaces?interval=year'])
        expect((await get(`/apps/${app.id}${p}`, app.api_key)).status, p).to.equal(503);
      // The same window for one account reads 300 rows: it answers now.
      const one = await get(`/apps/${app.id}/analytics?interval=year&namespace=acct-3`, app.api_key);
      expect(one.status, one.text).to.equal(200);
      expect(one.body.entitlements).to.deep.equal([{ id: 'api_calls', name: 'API calls', calls: 300, amount: 300 }]);
      // The last 3 hours are always read from the history: a 7-day window holds 23 of the rows, and answers.
      expect((await get(`/apps/${app.id}/analytics?interval=7d`, app.api_key)).status).to.equal(200);
    } finally {
      await testEnv().startWorker();
    }
    // The import's roll-up run (one app, its own workflow id) runs once a worker is there; then the same request
    // answers from the roll-up.
    const run = testEnv().deps.temporal.client.workflow.getHandle(usageRollupAppWorkflowId(app.id));
    const result = (await run.result()) as { done: boolean; apps: number };
    expect(result).to.deep.include({ done: true, apps: 1 });
    const ready = await eventually(async () => {
      const r = await get(`/apps/${app.id}/analytics?interval=alltime`, app.api_key);
      return r.status === 200 ? r : undefined;
    });
    expect(ready.body.entitlements).to.deep.equal([{ id: 'api_calls', name: 'API calls', calls: 3000, amount: 3000 }]);
    const series = await get(`/apps/${app.id}/analytics/timeseries?interval=year`, app.api_key);
    expect(series.status).to.equal(200);
    const total = (series.body.points as { calls: number }[]).reduce((n, p) => n + p.calls, 0);
    expect(total, 'every imported call in the year, once').to.equal(
      usage.filter((u) => Date.parse(u.created_at) >= Date.parse(series.body.from as string)).length,
    );
  });
  it('history written past the roll-up without an import: the first 503 starts the roll-up run, then it answers', async () => {
    const { app } = await seededApp({ accounts: Array.from({ length: 10 }, (_, i) => ({ id: `acct-${i}` })) });
    // An import of recent usage only (within the roll-up's normal lag) asks for no run of its own.
    const recent = Array.from({ length: 5 }, (_, i) => ({
      account_id: 'acct-1',
      entitlement_id: 'api_calls',
      amount: 1,
      created_at: new Date(Date.now() - (i + 1) * 60_000).toISOString(),
    }));
    expect((await post(`/apps/${app.id}/import`, testEnv().adminKey, { usage: recent })).status).to.equal(201);
    expect(await rollupAskedFor(app.id), 'recent usage needs no roll-up now').to.equal(false);
    // 3,000 rows of history over the last year, written straight into the table (as a roll-up that fell behind, or
    // ingest with past timestamps into a new app, leaves them): no import, so nothing has asked for the roll-up.
    await sql(
      testEnv().deps.orm.em.fork(),
      `insert into usage_events (app_id, account_id, entitlement_id, amount, count, created_at)
         select $1, 'acct-' || (g % 10), 'api_calls', 1, null, now() - interval '4 hours' - g * interval '2 hours'
           from generate_series(1, 3000) g`,
      [app.id],
    );
    expect(await rollupAskedFor(app.id)).to.equal(false);
    const refused = await get(`/apps/${app.id}/analytics?interval=alltime`, app.api_key);
    expect(refused.status, refused.text).to.equal(503);
    expect(Number(refused.headers.get('retry-after'))).to.be.within(10, 3600);
    // The refusal started the app's own run (in the background: the answer did not wait for it).
    const run = await eventually(async () => {
      const handle = testEnv().deps.temporal.client.workflow.getHandle(usageRollupAppWorkflowId(app.id));
      await handle.describe();
      return handle;
    });
    expect((await run.result()) as { done: boolean; apps: number }).to.deep.include({ done: true, apps: 1 });
    const ready = await eventually(async () => {
      const r = await get(`/apps/${app.id}/analytics?interval=alltime`, app.api_key);
      return r.status === 200 ? r : undefined;
    });
    expect(ready.body.entitlements).to.deep.equal([{ id: 'api_calls', name: 'API calls', calls: 3005, amount: 3005 }]);
  });
});
