// The `local` section of `npm run bench` (issue 44): a check from memory, and the time from a change made through
// one API process to a local evaluator (reading the stream of another) seeing it.
import { SecretClient } from '@offerkit/sdk';

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];

/**
 * `base`: the API process the evaluator reads; `other`: another API process the changes are made through.
 * `accounts`: ids of existing accounts on a plan with `api_calls`.
 */
export async function localBench(
  base: string,
  other: string,
  app: { id: string; api_key: string },
  accounts: string[],
): Promise<void> {
  const client = new SecretClient({ secretKey: app.api_key, appId: app.id, baseUrl: base });
  const writer = new SecretClient({ secretKey: app.api_key, appId: app.id, baseUrl: other });
  const local = client.local();
  try {
    await local.ready();
    const kept = accounts.slice(0, 200);
    for (const id of kept) await local.load(id);
    // Checks from memory: batches of 1,000, one core.
    const perCheck: number[] = [];
    let allowed = 0;
    const start = process.hrtime.bigint();
    for (let b = 0; b < 2000; b++) {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < 1000; i++) if (local.can(kept[(b + i) % kept.length], 'api_calls')) allowed++;
      perCheck.push(Number(process.hrtime.bigint() - t0) / 1000);
    }
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    perCheck.sort((a, b) => a - b);
    process.stdout.write(
      `local: check from memory p50 ${(percentile(perCheck, 0.5) / 1000).toFixed(3)} µs, ` +
        `p99 ${(percentile(perCheck, 0.99) / 1000).toFixed(3)} µs, ${Math.round(2e6 / seconds).toLocaleString('en')} ` +
        `checks/s on one core (${allowed} allowed)\n`,
    );
    // Change to seen: a usage add and a plan change made through the other process.
    const seen = async (what: () => Promise<unknown>, done: () => boolean) => {
      const t0 = performance.now();
      await what();
      while (!done()) {
        if (performance.now() - t0 > 10_000) throw new Error('a change was not seen within 10 s');
        await new Promise((r) => setTimeout(r, 1));
      }
      return performance.now() - t0;
    };
    const usage: number[] = [];
    const plans: number[] = [];
    for (let i = 0; i < 40; i++) {
      const id = kept[i];
      const before = local.access(id)!.entitlements.find((e) => e.id === 'api_calls')!.usage;
      usage.push(
        await seen(
          () => writer.usage.addAmount(id, 'api_calls', { amount: 3 }),
          () => local.access(id)!.entitlements.find((e) => e.id === 'api_calls')!.usage === before + 3,
        ),
      );
      const to = local.access(id)!.plan.id === 'pro' ? 'scale' : 'pro';
      plans.push(
        await seen(
          () => writer.accounts.update(id, { plan: to }),
          () => local.access(id)!.plan.id === to,
        ),
      );
    }
    for (const [name, xs] of [
      ['usage add', usage],
      ['plan change', plans],
    ] as const) {
      const s = [...xs].sort((a, b) => a - b);
      process.stdout.write(
        `local: change to seen (${name}, through another API process, ${s.length} changes): ` +
          `p50 ${percentile(s, 0.5).toFixed(0)} ms, p99 ${percentile(s, 0.99).toFixed(0)} ms\n`,
      );
    }
  } finally {
    await local.close();
  }
}
