// The `hot` section of `npm run bench`: the hot paths (usage add, effective access) through HTTP beside the raw
// database ceiling for the very same statement, with CPU per request by process.
import pg from 'pg';
import { access, EFFECTIVE_ACCESS_SQL } from '../src/access/access.service.js';
import { change } from '../src/usage/usage.service.js';
import { CHANGE_SQL } from '../src/usage/usage.sql.js';
import { ACCOUNTS, CONNECTIONS, DURATION, ROUNDS } from './settings.js';
import type { CpuAccount } from './cpu.js';
import { fmt, httpLoad, medianOf, raw, type Stats } from './load.js';

const machine = (m: CpuAccount['machine']) =>
  m ? [m.idle, m.irq, m.steal].map((x) => x.toFixed(0).padStart(5)).join(' ') : ''.padStart(17);

function cpuLine(name: string, c: number, h: CpuAccount, r: CpuAccount): string {
  const n = (x: number) => x.toFixed(0).padStart(7);
  const httpTotal = h.load + h.api + h.postgres;
  const rawTotal = r.load + r.postgres;
  return (
    `${name.padEnd(17)} ${String(c).padStart(5)} |${n(h.load)} ${n(h.api)} ${n(h.postgres)} ${n(httpTotal)} |` +
    `${n(r.load)} ${n(r.postgres)} ${n(rawTotal)} | ${((rawTotal / httpTotal) * 100).toFixed(0).padStart(9)}%  |` +
    `${machine(h.machine)} |${machine(r.machine)}\n`
  );
}
const cpu = (h: Stats) => (h.apiCpu === undefined ? '' : fmt(h.apiCpu, 0));

/**
 * Hot paths: usage add and effective access through HTTP beside the very same statement over a plain pool (one by
 * one, and coalesced as the API process coalesces it), after the HTTP stack's floor; then CPU per request by process.
 */
export async function hotBench(
  base: string,
  pool: pg.Pool,
  app: { id: string; api_key: string },
  account: () => string,
): Promise<void> {
  const usageParams = () => [
    ...[app.id, account(), 'api_calls', 1, 'evt_bench_w', 'evt_bench_r', null, null, null],
    ...['evt_bench_c', null, 'grt_bench', ''], // CHANGE_SQL's credits parameters (draws nothing; no entity)
  ];
  const scenarios = [
    {
      name: 'usage add',
      http: (c: number) =>
        httpLoad(
          base,
          c,
          () => `/apps/${app.id}/namespaces/${account()}/usage/api_calls/add`,
          'POST',
          // A backend's call on its own user's request: the secret key (the publishable key is a browser's, held
          // to 100 requests a second per client address).
          app.api_key,
        ),
      raw: (c: number, via?: boolean) =>
        raw(pool, c, 'usage_change', CHANGE_SQL, usageParams, via ? (p) => change.onPool(pool, p) : undefined),
    },
    {
      name: 'effective access',
      http: (c: number) => httpLoad(base, c, () => `/apps/${app.id}/namespaces/${account()}/plan`, 'GET', app.api_key),
      raw: (c: number, via?: boolean) =>
        raw(
          pool,
          c,
          'effective_access',
          EFFECTIVE_ACCESS_SQL,
          () => [app.id, account()],
          via ? (p) => access.onPool(pool, p) : undefined,
        ),
    },
  ];
  process.stdout.write(
    `\nHot paths: ${DURATION} s per cell, ${ACCOUNTS} accounts picked at random, API process LOG_LEVEL=warn, ` +
      `shipped throttling defaults (secret key), ${process.env.BENCH_LABEL ?? 'this machine'}\n`,
  );
  process.stdout.write(
    'scenario          conns   HTTP req/s   p50 ms   p99 ms |  raw SQL/s   p50 ms   p99 ms |  HTTP/raw  errors' +
      '  API CPU µs/req | raw coalesced/s  HTTP/that\n',
  );
  // The HTTP stack alone (no credential, no database): the most the API process can answer on this machine.
  // BENCH_HOT=floor runs only this row; another BENCH_HOT value skips it (a profile of one path alone).
  for (const c of process.env.BENCH_HOT && process.env.BENCH_HOT !== 'floor' ? [] : CONNECTIONS) {
    const h = await httpLoad(base, c, () => '/', 'GET', '');
    process.stdout.write(
      `${'GET / (floor)'.padEnd(17)} ${String(c).padStart(5)} ${fmt(h.rps, 0)}    ${fmt(h.p50, 2)} ${fmt(h.p99, 2)} | ` +
        `${''.padStart(36)}|           ${String(h.errors).padEnd(6)}${cpu(h)}\n`,
    );
  }
  // BENCH_HOT=usage runs only the scenarios whose name starts with it (for a profile of one path).
  const accounts: string[] = [];
  for (const s of scenarios.filter((x) => x.name.startsWith(process.env.BENCH_HOT ?? ''))) {
    await s.http(4); // warm-up: JIT, pools, plans, the credential cache
    for (const c of CONNECTIONS) {
      // BENCH_ROUNDS > 1 alternates HTTP and raw that many times and adds the median ratio: on a shared machine
      // one pair of cells can move 15-20% either way.
      const ratios: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const h = await s.http(c);
        const r = await s.raw(c);
        // The same statement coalesced as the API process coalesces it, from the same pool: what the database
        // does for the API's own way of sending it (above the one-by-one ceiling under load).
        const rc = await s.raw(c, true);
        const ratio = h.rps / r.rps;
        ratios.push(ratio);
        process.stdout.write(
          `${s.name.padEnd(17)} ${String(c).padStart(5)} ${fmt(h.rps, 0)}    ${fmt(h.p50, 2)} ${fmt(h.p99, 2)} | ` +
            `${fmt(r.rps, 0)} ${fmt(r.p50, 2)} ${fmt(r.p99, 2)} | ${fmt(ratio * 100, 0)}%   ` +
            `${String(h.errors + r.errors + rc.errors).padEnd(6)}${cpu(h)}       | ${fmt(rc.rps, 0)}      ` +
            `${fmt((h.rps / rc.rps) * 100, 0)}%\n`,
        );
        if (h.account && r.account) accounts.push(cpuLine(s.name, c, h.account, r.account));
      }
      if (ROUNDS > 1) {
        const median = medianOf(ratios);
        process.stdout.write(`${`${s.name}, median`.padEnd(23)} ${''.padStart(77)}${fmt(median * 100, 0)}%\n`);
      }
    }
  }
  if (accounts.length) {
    // On two cores shared by all three, throughput is about cores / total CPU per request, so the ratio of the
    // totals is where HTTP/raw would settle if nothing waited; the columns say which process the gap is in.
    process.stdout.write(
      '\nCPU per request (µs): load generator (autocannon | pg client), API, PostgreSQL, total\n' +
        'scenario          conns |   load     API      PG   total |   load      PG   total |  raw/HTTP total  |' +
        ' HTTP: idle%  irq% steal% | raw: idle%  irq% steal%\n' +
        accounts.join(''),
    );
  }
}
