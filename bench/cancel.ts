// The `cancel` section of `npm run bench`: cancel sessions walked as a customer's browser walks them, with an
// account token.
import { AccountTokenClient, SecretClient } from '@offerkit/sdk';
import { DURATION } from './settings.js';
import { fmt, percentile } from './load.js';

/**
 * Cancel sessions as a customer's browser drives them with an account token: start, answer the
 * reason (which picks a static incentive offer), decline it, close. Per-call latency and walks/s.
 */
export async function cancelSessionBench(base: string, app: { id: string; api_key: string }) {
  // Through the SDK, as a product would: the secret key on the server, account tokens in the browser.
  const secret = new SecretClient({ secretKey: app.api_key, appId: app.id, baseUrl: base });
  await secret.incentives.create({ id: 'partner', name: 'Partner deal' });
  await secret.cancelFlows.create({
    status: 'active',
    steps: [
      {
        id: 'reason',
        type: 'question',
        title: 'Why?',
        answers: [
          { id: 'price', label: 'Price' },
          { id: 'other', label: 'Other' },
        ],
      },
      {
        id: 'offer',
        type: 'offer',
        title: 'Stay?',
        decline_label: 'No',
        offers: [{ kind: 'incentive', incentive: 'partner', months: 1 }],
      },
      { id: 'confirm', type: 'confirm', title: 'Sure?' },
    ],
  });
  const browsers = await Promise.all(
    Array.from({ length: 100 }, async (_, i) => {
      const { token } = await secret.accounts.createToken(`acct-${i}`, {});
      return new AccountTokenClient({ accountToken: token, baseUrl: base, maxRetries: 0 });
    }),
  );
  process.stdout.write(
    `\nCancel sessions (account token; start, answer, decline, close = 4 calls per walk), ${DURATION} s per row:\n`,
  );
  process.stdout.write('walkers   walks/s   calls/s   p50 ms   p99 ms  errors\n');
  for (const walkers of [1, 16]) {
    const latencies: number[] = [];
    let walks = 0;
    let errors = 0;
    const end = Date.now() + DURATION * 1000;
    await Promise.all(
      Array.from({ length: walkers }, async (_, w) => {
        const sessions = browsers[w % browsers.length].cancelSessions;
        const timed = async <T>(call: () => Promise<T>): Promise<T> => {
          const t0 = process.hrtime.bigint();
          try {
            return await call();
          } catch (err) {
            errors++;
            throw err;
          } finally {
            latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
          }
        };
        while (Date.now() < end) {
          const s = await timed(() => sessions.start({}));
          await timed(() => sessions.answer(s.id, { step: 'reason', answer: 'price' }));
          await timed(() => sessions.decline(s.id));
          await timed(() => sessions.close(s.id));
          walks++;
        }
      }),
    );
    latencies.sort((a, b) => a - b);
    process.stdout.write(
      `${String(walkers).padStart(7)} ${fmt(walks / DURATION, 1)} ${fmt(latencies.length / DURATION, 0)} ` +
        `${fmt(percentile(latencies, 50), 2)} ${fmt(percentile(latencies, 99), 2)}  ${errors}\n`,
    );
  }
}
