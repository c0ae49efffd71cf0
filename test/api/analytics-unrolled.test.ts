// Analytics over history the roll-up has not reached yet (issue 39, item 8): a year imported into a new app answers
// within the statement bound by saying when it will be ready (503 with Retry-After), the import starts the app's
// roll-up, and once it has run the same request answers from it. The limit of rows read from the history is lowered
// for the test (ANALYTICS_UNROLLED_ROWS_MAX), so a few thousand rows stand for millions.
import { expect } from 'chai';
import { usageRollupAppWorkflowId } from '../../workflows/shared.js';
import { seededApp } from '../helpers/factories.js';
import { get, post } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

const HOUR = 3_600_000;

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
});
