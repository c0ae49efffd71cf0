// The bench's load loops: HTTP through autocannon and the raw statement over a plain pg pool, each answering
// requests a second, latency percentiles, errors and where the CPU went; and the figures' formatting.
import autocannon from 'autocannon';
import pg from 'pg';
import { DURATION } from './settings.js';
import { apiWatched, cpuAccount, type CpuAccount } from './cpu.js';

export interface Stats {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  /** CPU time the API process used per request (user and system, all its threads), in µs. */
  apiCpu?: number;
  /** CPU per request of every process on its way, in µs: this process (the load generator), the API, PostgreSQL. */
  account?: CpuAccount;
}

export function percentile(sorted: number[], p: number) {
  if (!sorted.length) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export async function httpLoad(
  base: string,
  connections: number,
  pathFor: () => string,
  method: 'GET' | 'POST',
  token: string,
): Promise<Stats> {
  const [result, account] = await cpuAccount(
    () =>
      autocannon({
        url: base,
        connections,
        duration: DURATION,
        headers: token ? { authorization: `Bearer ${token}` } : {},
        requests: [{ method, setupRequest: (req) => ({ ...req, path: pathFor() }) }],
      }),
    (r) => r.requests.total,
  );
  return {
    account,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.non2xx + result.errors,
    apiCpu: account && apiWatched() ? account.api : undefined,
  };
}

/**
 * The same statement the route runs (prepared, as the route prepares it), issued directly over a pool of
 * `connections` clients.
 */
export async function raw(
  pool: pg.Pool,
  connections: number,
  name: string,
  text: string,
  paramsFor: () => unknown[],
  /** How to run it instead of one `pool.query` each: the API's coalesced path (src/db/coalesce.ts). */
  via?: (params: unknown[]) => Promise<unknown>,
): Promise<Stats> {
  const latencies: number[] = [];
  let errors = 0;
  const end = Date.now() + DURATION * 1000;
  const [, account] = await cpuAccount(
    () =>
      Promise.all(
        Array.from({ length: connections }, async () => {
          while (Date.now() < end) {
            const t0 = process.hrtime.bigint();
            try {
              await (via ? via(paramsFor()) : pool.query({ name, text, values: paramsFor() }));
            } catch {
              errors++;
            }
            latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
          }
        }),
      ),
    () => latencies.length,
  );
  latencies.sort((a, b) => a - b);
  return {
    rps: latencies.length / DURATION,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    errors,
    account,
  };
}

export const fmt = (n: number, d = 1) => n.toFixed(d).padStart(9);
/** The middle value; with an even count, the mean of the two middle ones. */
export function medianOf(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}
