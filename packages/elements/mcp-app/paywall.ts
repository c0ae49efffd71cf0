// The paywall app (ui://offerkit/paywall): the 402 of a usage call, or where the counter stands after one.
import '../src/paywall.js';
import { say, start } from './shared.js';

start((data) => {
  // A 402 shows the paywall; a usage call that went through says what the counter is now.
  if (!document.querySelector('offerkit-paywall')!.show(data) && typeof data.count === 'number')
    say(`${String(data.entitlement)}: ${data.count} used`);
});
