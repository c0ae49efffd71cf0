// The usage meter app (ui://offerkit/usage-meter): get_account_usage's counters against the account's limits.
import '../src/usage-meter.js';
import { isAccess, readThroughHost, say, start } from './shared.js';

start(async (data, args) => {
  const meter = document.querySelector('offerkit-usage-meter')!;
  if (isAccess(data)) {
    meter.access = data;
    return;
  }
  // `{ <entitlement>: count }`: the limits and the plan are the account's access, read through the host.
  const access = await readThroughHost('get_account_access', args);
  if (isAccess(access)) meter.access = access;
  else
    say(
      Object.entries(data)
        .map(([k, v]) => `${k}: ${String(v)} used`)
        .join(', '),
    );
});
