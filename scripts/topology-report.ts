// The report of `npm run topology`: the wait for the run to converge (nothing left in the outbox, no delivery pending,
// no checkout open, every incentive expired, every pause resumed, every event delivered), then the figures (writes
// acknowledged and applied, timers fired, deliveries, what is stuck, CPU by process) and the targets missed.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import pg from 'pg';
import { startReceiver } from '../test/helpers/receiver.js';
import { Proc } from './procs.js';
import type { Cluster } from './topology-temporal.js';
import type { Ack, runScenario } from './topology-scenario.js';
import { elapsed, say, SETTINGS, sleep } from './topology-settings.js';

const TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

/** CPU seconds (user + system) a live process has used, its children that it waited for included. */
function cpuSeconds(pid: number): number {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    // utime, stime, cutime, cstime are fields 14-17 of stat; here 0-based after the command: 11-14.
    return fields.slice(11, 15).reduce((n, x) => n + Number(x), 0) / TICKS;
  } catch {
    return 0;
  }
}

/** A process and its live descendants (PostgreSQL's backends, a dev server's children). */
function tree(pid: number): number[] {
  const out = [pid];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const ppid = Number(fs.readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1].split(' ')[1]);
      if (ppid === pid) out.push(...tree(Number(entry)));
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}

const cpuOf = (pids: number[]) => pids.flatMap(tree).reduce((n, p) => n + cpuSeconds(p), 0);

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : 0;
}

type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/** Waits (TOPOLOGY_CONVERGE_S at the most) until nothing is left to do; answers the last state and whether it converged. */
export async function converge(db: pg.Pool, appId: string, receiver: Receiver) {
  const count = async (q: string, params: unknown[] = []) => Number((await db.query(q, params)).rows[0].n);
  const state = async () => {
    const [outbox, pending, openCheckouts, incentives, paused, deliveries] = await Promise.all([
      count(`select count(*) as n from outbox`),
      count(`select count(*) as n from webhook_deliveries where app_id = $1 and status = 'pending'`, [appId]),
      count(`select count(*) as n from checkouts where app_id = $1 and status = 'created'`, [appId]),
      count(`select count(*) as n from accounts where app_id = $1 and incentive_id is not null`, [appId]),
      count(`select count(*) as n from subscriptions where app_id = $1 and status = 'paused'`, [appId]),
      count(`select count(*) as n from webhook_deliveries where app_id = $1`, [appId]),
    ]);
    const events = await count(`select count(*) as n from events where app_id = $1 and type = any($2)`, [
      appId,
      [
        'account.created',
        'account.incentive_removed',
        'checkout.completed',
        'subscription.paused',
        'subscription.resumed',
      ],
    ]);
    return { outbox, pending, openCheckouts, incentives, paused, deliveries, events };
  };
  let s = await state();
  const convergeEnd = Date.now() + SETTINGS.convergeS * 1000;
  const converged = () =>
    s.outbox === 0 &&
    s.pending === 0 &&
    s.openCheckouts === 0 &&
    s.incentives === 0 &&
    s.paused === 0 &&
    s.deliveries === s.events &&
    new Set(receiver.received.map((r) => String(r.headers['webhook-id']))).size >= s.events;
  while (!converged() && Date.now() < convergeEnd) {
    await sleep(500);
    s = await state();
  }
  const convergedAt = Date.now();
  return { s, converged: converged(), convergedAt };
}

/** Prints the figures and answers the targets missed (none: all met). */
export async function report(
  db: pg.Pool,
  appId: string,
  receiver: Receiver,
  run: Awaited<ReturnType<typeof runScenario>>,
  end: Awaited<ReturnType<typeof converge>>,
  processes: { started: number; postgres: number | null | undefined; cluster: Cluster; apis: Proc[]; workers: Proc[] },
): Promise<string[]> {
  const count = async (q: string, params: unknown[] = []) => Number((await db.query(q, params)).rows[0].n);
  const { acks, buyers, checkoutIds, approveUrls, pausedAt, expiresAt, advancedAt, quietFrom } = run;
  const { s, convergedAt } = end;
  const { started, cluster, apis, workers } = processes;
  const lastTimer = Math.max(expiresAt.getTime(), advancedAt);
  const eventsByType = async (type: string) =>
    (
      await db.query(
        `select id, data->'object'->>'id' as object, created_at from events where app_id = $1 and type = $2`,
        [appId, type],
      )
    ).rows as { id: string; object: string | null; created_at: Date }[];
  const created = await eventsByType('account.created');
  const createdBurst = created.filter((e) => e.object?.startsWith('a'));
  const removed = await eventsByType('account.incentive_removed');
  const completed = await eventsByType('checkout.completed');
  const resumed = await eventsByType('subscription.resumed');
  const pausedEvents = await eventsByType('subscription.paused');
  const accountsInDb = await count(`select count(*) as n from accounts where app_id = $1 and id like 'a%'`, [appId]);
  const usageTotal = await count(
    `select coalesce(sum(count), 0) as n from usage_counters where app_id = $1 and entitlement_id = 'calls'`,
    [appId],
  );
  const acked = (xs: Ack[], ok: number[]) => xs.filter((x) => ok.includes(x.status)).length;
  const retried = (xs: Ack[]) => xs.filter((x) => x.tries > 1).length;
  const dupObjects = (xs: { object: string | null }[]) => xs.length - new Set(xs.map((x) => x.object)).size;

  const byId = new Map<string, number[]>();
  for (const r of receiver.received) {
    const id = String(r.headers['webhook-id']);
    byId.set(id, [...(byId.get(id) ?? []), r.at]);
  }
  const allEvents = [...created, ...removed, ...completed, ...resumed, ...pausedEvents];
  const lost = allEvents.filter((e) => !byId.has(e.id)).length;
  const duplicates = [...byId.values()].reduce((n, xs) => n + xs.length - 1, 0);
  const createdLatency = created.filter((e) => byId.has(e.id)).map((e) => byId.get(e.id)![0] - e.created_at.getTime());
  const arrivals = created.filter((e) => byId.has(e.id)).map((e) => byId.get(e.id)![0]);
  const firstCreated = Math.min(...created.map((e) => e.created_at.getTime()));
  const deliveriesPerS = arrivals.length / Math.max(0.001, (Math.max(...arrivals) - firstCreated) / 1000);
  const expiryLateness = removed
    .map((e) => e.created_at.getTime() - expiresAt.getTime())
    .filter((x) => Number.isFinite(x));

  const failures: string[] = [];
  const check = (ok: boolean, what: string) => {
    if (!ok) failures.push(what);
  };
  say('\nwrites (acknowledged = answered 2xx, or 409 to a retry whose first try got no answer)');
  say(
    `   accounts     sent ${SETTINGS.accounts}, acknowledged ${acked(acks.accounts, [201, 409])}, retried ${retried(acks.accounts)}, ` +
      `in the database ${accountsInDb}, account.created events ${createdBurst.length} (duplicates ${dupObjects(createdBurst)})`,
  );
  check(
    accountsInDb === SETTINGS.accounts && createdBurst.length === SETTINGS.accounts && dupObjects(created) === 0,
    'every account applied once',
  );
  say(
    `   usage adds   sent ${SETTINGS.usage} (each with its Idempotency-Key), acknowledged ${acked(acks.usage, [200])}, ` +
      `retried ${retried(acks.usage)}, counted ${usageTotal}`,
  );
  check(usageTotal === acked(acks.usage, [200]) && usageTotal === SETTINGS.usage, 'every usage add applied once');
  say(
    `   checkouts    opened ${checkoutIds.length}, approved at the stand-in ${approveUrls.length}, completed ` +
      `${completed.length} (applied twice: ${dupObjects(completed)})`,
  );
  check(completed.length === SETTINGS.checkouts && dupObjects(completed) === 0, 'every checkout completed once');
  say(
    `   pauses       acknowledged ${pausedAt.size} of ${buyers.length}, subscription.paused events ${pausedEvents.length}`,
  );
  check(pausedAt.size === buyers.length && pausedEvents.length === buyers.length, 'every pause applied once');
  say('timers');
  say(
    `   incentive expiries  ${removed.length} of ${SETTINGS.accounts} fired (twice: ${dupObjects(removed)}), ` +
      `late p50 ${percentile(expiryLateness, 50)} ms, max ${Math.max(0, ...expiryLateness)} ms`,
  );
  check(removed.length === SETTINGS.accounts && dupObjects(removed) === 0, 'every expiry fired once');
  say(`   pause resumes       ${resumed.length} of ${pausedAt.size} fired (twice: ${dupObjects(resumed)})`);
  check(resumed.length === buyers.length && dupObjects(resumed) === 0, 'every resume fired once');
  say('deliveries');
  say(
    `   events ${allEvents.length}, delivery rows ${s.deliveries}, received ${receiver.received.length}, ` +
      `distinct ${byId.size}, duplicates ${duplicates}, lost ${lost}`,
  );
  check(lost === 0, 'every delivery delivered');
  say(
    `   account.created: ${(deliveriesPerS || 0).toFixed(1)} deliveries/s (first event to last first arrival), ` +
      `first attempt p50 ${percentile(createdLatency, 50)} ms, p99 ${percentile(createdLatency, 99)} ms`,
  );
  say('stuck');
  say(
    `   outbox ${s.outbox}, pending deliveries ${s.pending}, open checkouts ${s.openCheckouts}, ` +
      `incentives not removed ${s.incentives}, pauses not resumed ${s.paused}`,
  );
  check(end.converged, 'nothing stuck');
  say(
    `converged ${((convergedAt - quietFrom) / 1000).toFixed(1)} s after the last restart and the last write, ` +
      `${((convergedAt - lastTimer) / 1000).toFixed(1)} s after the last timer was due; whole run ${elapsed(started)}`,
  );
  const cpu = {
    postgres: processes.postgres ? cpuOf([processes.postgres]) : 0,
    temporal: cpuOf(cluster.pids()),
    api: cpuOf(apis.map((p) => p.child?.pid ?? 0).filter(Boolean)),
    workers: cpuOf(workers.map((p) => p.child?.pid ?? 0).filter(Boolean)),
    scenario: (process.cpuUsage().user + process.cpuUsage().system) / 1e6,
  };
  say(
    `cpu seconds since start (live processes; a killed one's time is lost): ` +
      Object.entries(cpu)
        .map(([k, v]) => `${k} ${v.toFixed(1)}`)
        .join(', ') +
      `; load average ${fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`,
  );
  say(failures.length ? `\nMISSED: ${failures.join('; ')}` : '\nall targets met');
  return failures;
}
