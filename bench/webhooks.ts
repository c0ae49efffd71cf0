// The `webhooks` section of `npm run bench`: webhook deliveries to a local receiver (a burst, one at a time, a
// drain) beside the Temporal baseline of as many trivial workflows (bench/temporal-baseline.ts).
import http from 'node:http';
import type net from 'node:net';
import pg from 'pg';
import { SecretClient } from '@offerkit/sdk';
import { testEnv } from '../test/helpers/servers.js';
import { ROUNDS } from './settings.js';
import { cpuReading, profileMain, workflowCpuLine } from './cpu.js';
import { percentile } from './load.js';
import { temporalBaseline } from './temporal-baseline.js';

const DELIVERIES = Number(process.env.BENCH_DELIVERIES ?? 1000);

/**
 * Webhook deliveries: DELIVERIES events (plan creations through the API process, 16 at a time), one
 * endpoint on a local receiver answering 200. Latency = receiver's clock at arrival minus the event's
 * created_at (same machine). History length read from Temporal for a sample of deliveries.
 */
async function deliveryBench(
  base: string,
  app: { id: string; api_key: string },
  round: number,
): Promise<{ burst: number; drain: number }> {
  const arrivals = new Map<string, number>();
  let firstArrival = 0;
  let lastArrival = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const now = Date.now();
      arrivals.set(String(req.headers['webhook-id']), now);
      firstArrival ||= now;
      lastArrival = now;
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.address() as net.AddressInfo).port;
  const auth = { authorization: `Bearer ${app.api_key}`, 'content-type': 'application/json' };
  const secret = new SecretClient({ secretKey: app.api_key, appId: app.id, baseUrl: base });
  const ep = await secret.webhooks.create({ url: `http://127.0.0.1:${port}/hook`, events: ['plan.created'] });
  const t0 = Date.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < DELIVERIES) {
        const i = next++;
        const r = await fetch(`${base}/apps/${app.id}/plans`, {
          method: 'POST',
          headers: auth,
          body: JSON.stringify({ id: `bench_${round}_${i}`, name: `Bench ${i}` }),
        });
        if (r.status !== 201) throw new Error(`plan create ${r.status}`);
      }
    }),
  );
  const produced = Date.now();
  while (arrivals.size < DELIVERIES && Date.now() - produced < 120_000) await new Promise((r) => setTimeout(r, 100));
  // Each delivery's event time comes from the event log.
  const pool = new pg.Pool({ connectionString: testEnv().config.databaseUrl, max: 2 });
  const rows = (
    await pool.query(
      `select d.id, d.event_id, d.attempts, e.created_at from webhook_deliveries d join events e on e.id = d.event_id
        where d.endpoint_id = $1`,
      [ep.id],
    )
  ).rows;
  await pool.end();
  const latencies = rows
    .filter((r) => arrivals.has(r.event_id) && r.attempts === 1)
    .map((r) => arrivals.get(r.event_id)! - new Date(r.created_at).getTime());
  latencies.sort((a, b) => a - b);
  const sample = rows.slice(0, 20);
  let historyEvents = 0;
  for (const r of sample)
    historyEvents += (await testEnv().deps.temporal.client.workflow.getHandle(r.id).fetchHistory()).events?.length ?? 0;
  const delivered = arrivals.size;
  const burstEnd = lastArrival;
  // Unloaded: one event at a time, waiting for each delivery, so the latency has no queue in it.
  const single: number[] = [];
  for (let i = 0; i < 50; i++) {
    const r = await fetch(`${base}/apps/${app.id}/plans`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ id: `single_${round}_${i}`, name: `Single ${i}` }),
    });
    const created = Date.parse(((await r.json()) as { created_at: string }).created_at);
    const before = arrivals.size;
    while (arrivals.size === before) await new Promise((res) => setTimeout(res, 2));
    single.push(lastArrival - created);
  }
  single.sort((a, b) => a - b);

  // Drain: the same number of events produced while no worker runs (the outbox starts their workflows, which
  // wait in the task queue), then the worker starts: deliveries per second from its start to the last 2xx, with
  // nothing else running. The baseline is drained the same way, so this compares what the server and the worker
  // do per delivery with what they do per trivial workflow.
  await testEnv().stopWorker();
  const before = arrivals.size;
  await Promise.all(
    Array.from({ length: 16 }, async (_, w) => {
      for (let i = w; i < DELIVERIES; i += 16) {
        const r = await fetch(`${base}/apps/${app.id}/plans`, {
          method: 'POST',
          headers: auth,
          body: JSON.stringify({ id: `drain_${round}_${i}`, name: `Drain ${i}` }),
        });
        if (r.status !== 201) throw new Error(`plan create ${r.status}`);
      }
    }),
  );
  const outbox = new pg.Pool({ connectionString: testEnv().config.databaseUrl, max: 1 });
  for (let i = 0; i < 1200; i++) {
    const { rows: left } = await outbox.query<{ n: string }>('select count(*) as n from outbox');
    if (Number(left[0].n) === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  await outbox.end();
  const drainStart = Date.now();
  const drainCpu = cpuReading();
  const stopProfile = await profileMain(`deliveries-drain-${round + 1}`);
  await testEnv().startWorker();
  while (arrivals.size < before + DELIVERIES && Date.now() - drainStart < 120_000)
    await new Promise((r) => setTimeout(r, 20));
  const drained = arrivals.size - before;
  const cpuPerDelivery = drainCpu(drained);
  await stopProfile();
  const drainRate = drained / ((lastArrival - drainStart) / 1000);
  // The next round's endpoint is the only one subscribed.
  await secret.webhooks.delete(ep.id);
  server.close();
  process.stdout.write(
    `\nWebhook deliveries (round ${round + 1}): ${DELIVERIES} events (plan.created), one endpoint on a local receiver answering 200\n` +
      `  delivered            ${delivered} of ${DELIVERIES} (all on attempt 1: ${latencies.length === DELIVERIES})\n` +
      `  events produced in   ${((produced - t0) / 1000).toFixed(1)} s ` +
      `(${(DELIVERIES / ((produced - t0) / 1000)).toFixed(0)}/s through the API)\n` +
      `  throughput           ${(delivered / ((burstEnd - t0) / 1000)).toFixed(0)} deliveries/s ` +
      `(first event to last 2xx: ${((burstEnd - t0) / 1000).toFixed(1)} s)\n` +
      `  first attempt        p50 ${percentile(latencies, 50).toFixed(0)} ms, p99 ${percentile(latencies, 99).toFixed(0)} ms ` +
      `(event committed to receiver, during the burst)\n` +
      `  one at a time        p50 ${percentile(single, 50).toFixed(0)} ms, p99 ${percentile(single, 99).toFixed(0)} ms ` +
      `(50 events, no backlog)\n` +
      `  Temporal history     ${(historyEvents / sample.length).toFixed(1)} events per successful delivery ` +
      `(mean of ${sample.length})\n` +
      `  drain                ${drained} of ${DELIVERIES} queued deliveries at ${drainRate.toFixed(0)}/s ` +
      `(their workflows started while no worker ran; from the worker's start to the last 2xx)\n` +
      workflowCpuLine(cpuPerDelivery),
  );
  return { burst: delivered / ((burstEnd - t0) / 1000), drain: drainRate };
}

/**
 * Webhook deliveries beside the baseline, BENCH_ROUNDS rounds. The two alternate which goes first (deliveries
 * then baseline, baseline then deliveries, ...): the Temporal server slows as its in-memory store grows, by a
 * fifth or more over a round here, so whichever ran second would lose. Over an even number of rounds that drift
 * cancels in the ratio of the mean rates, which is the headline.
 */
export async function webhookBench(base: string, app: { id: string; api_key: string }) {
  const baseline = await temporalBaseline(DELIVERIES);
  const pct = (x: number) => `${(x * 100).toFixed(0)}%`;
  const d: { burst: number; drain: number }[] = [];
  const b: { burst: number; drain: number }[] = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      if (round % 2 === 0) {
        d.push(await deliveryBench(base, app, round));
        b.push(await baseline.round(round));
      } else {
        b.push(await baseline.round(round));
        d.push(await deliveryBench(base, app, round));
      }
      const [dr, br] = [d[round], b[round]];
      process.stdout.write(
        `  webhook deliveries   burst ${dr.burst.toFixed(0)}/s = ${pct(dr.burst / br.burst)} of the baseline; ` +
          `drain ${dr.drain.toFixed(0)}/s = ${pct(dr.drain / br.drain)} of the baseline's drain (round ${round + 1})\n`,
      );
    }
    if (ROUNDS > 1) {
      const mean = (xs: number[]) => xs.reduce((x, y) => x + y, 0) / xs.length;
      const ratio = (k: 'burst' | 'drain') => mean(d.map((x) => x[k])) / mean(b.map((x) => x[k]));
      process.stdout.write(
        `\nWebhook deliveries against the baseline, mean rates over ${ROUNDS} rounds` +
          `${ROUNDS % 2 ? ' (an odd count: the drift does not cancel)' : ''}: burst ${pct(ratio('burst'))}, ` +
          `drain ${pct(ratio('drain'))}\n`,
      );
    }
  } finally {
    await baseline.close();
  }
}
