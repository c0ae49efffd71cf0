// The client process of `npm run chaos -- offline` (scripts/chaos-offline.ts): a product's server using the SDK's
// local evaluator (`client.local()`) in a loop: checks (`can`) for its accounts and tracks usage (`track`), the
// buffer kept in a file. It writes what it did to a log, one JSON line each, synchronously and before the call it
// describes, so a SIGKILL loses nothing the judge (scripts/chaos-offline-judge.ts) needs:
//   {k:'c', a, e, ok, known}   a check and its answer; `known`: the evaluator knew the account (access() not null)
//   {k:'t', n, a, e, amt}      a track about to be queued (its number n in this log)
//   {k:'d', n}                 that track was queued (persisted in the buffer file)
//   {k:'x', a, e, amt, status} a buffered add the API refused (dropped by the evaluator)
//   {k:'start', pid} / {k:'end', pid, pending}
// Settings (environment): OFFLINE_BASE, OFFLINE_APP, OFFLINE_KEY, OFFLINE_BUFFER, OFFLINE_LOG, OFFLINE_ACCOUNTS (a
// JSON list of account ids to load first), OFFLINE_UNKNOWN (ids it never loads: the unknown policy answers), and
// OFFLINE_SEED. SIGTERM ends it: the loop stops, the buffer is flushed (up to 120 s), then it exits.
import fs from 'node:fs';
// The SDK from its source, so the run never uses a stale packages/sdk/dist.
import { SecretClient } from '../packages/sdk/src/index.js';

const env = (name: string) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};
const LOG = env('OFFLINE_LOG');
const known: string[] = JSON.parse(env('OFFLINE_ACCOUNTS'));
const unknown: string[] = JSON.parse(process.env.OFFLINE_UNKNOWN ?? '[]');
const log = (line: Record<string, unknown>) => fs.appendFileSync(LOG, `${JSON.stringify(line)}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let seed = Number(process.env.OFFLINE_SEED ?? 1) >>> 0 || 1;
const rand = () => {
  seed ^= seed << 13;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  return (seed >>> 0) / 2 ** 32;
};
const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)];

const client = new SecretClient({
  baseUrl: env('OFFLINE_BASE'),
  appId: env('OFFLINE_APP'),
  secretKey: env('OFFLINE_KEY'),
  maxRetries: 0,
  timeout: 3000,
});
const local = client.local({
  bufferFile: env('OFFLINE_BUFFER'),
  // Metering (`tokens`, unlimited) is never refused; a limit (`calls`) or a feature (`sso`) is, for an account never
  // seen.
  unknown: { tokens: true, default: false },
  onDropped: (item, err) =>
    log({ k: 'x', a: item.accountId, e: item.entitlementId, amt: item.amount, status: err.status }),
});

log({ k: 'start', pid: process.pid });
let stopping = false;
process.on('SIGTERM', () => (stopping = true));

// Load what it can (a restart during an outage cannot: it answers from the buffer and the unknown policy until the
// API is back, then loads each account at its first check).
const loaded = Promise.all(known.map((a) => local.load(a).catch(() => null)));
await Promise.race([Promise.all([local.ready(5000).catch(() => undefined), loaded]), sleep(6000)]);
process.stdout.write(`client running (pid ${process.pid})\n`);

let n = 0;
let last = '';
const track = async (a: string, e: string, amt: number) => {
  const id = ++n;
  log({ k: 't', n: id, a, e, amt });
  await local.track(a, e, amt);
  log({ k: 'd', n: id });
};
const check = (a: string, e: string) => {
  const knew = local.access(a) !== null;
  const ok = local.can(a, e);
  log({ k: 'c', a, e, ok, known: knew });
  return ok;
};

while (!stopping) {
  const a = pick([...known, ...known, ...unknown]);
  // A few checks on others (as other requests would), then this request's: the feature, the limit.
  for (let i = 0; i < 4; i++) check(pick(known), pick(['calls', 'sso']));
  check(a, 'sso');
  if (check(a, 'calls')) await track(a, 'calls', 1);
  // Metering: never two equal adds in a row, so the judge can tell whether a track cut by SIGKILL reached the file.
  let amt = 1 + Math.floor(rand() * 5);
  if (`${a}|${amt}` === last) amt += 1;
  last = `${a}|${amt}`;
  await track(a, 'tokens', amt);
  await sleep(20 + Math.floor(rand() * 20));
}

await local.flush(120_000).catch((err: unknown) => process.stdout.write(`flush: ${String(err)}\n`));
log({ k: 'end', pid: process.pid, pending: local.pending });
await local.close();
process.exit(0);
