import { condition, proxyActivities, setCurrentDetails, setHandler } from '@temporalio/workflow';
import type { Activities } from './contracts/activities.js';
import {
  infraRetry,
  reservationExpiryDef,
  type ReservationExpiryInput,
  type ReservationExpiryState,
} from './shared.js';

const { expireReservation } = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  // Never gives up on PostgreSQL: capped backoff for as long as it is down (the release is idempotent).
  retry: infraRetry(),
});

/**
 * Waits (durable timer) until the reservation's deadline, then releases its hold unless it was
 * committed or released first (a signal ends the wait early). The release is one guarded statement,
 * so it happens once however often the activity runs.
 */
export async function reservationExpiryWorkflow(input: ReservationExpiryInput): Promise<ReservationExpiryState> {
  const state: ReservationExpiryState = { reservationId: input.reservationId, phase: 'waiting', outcome: null };
  let settledAs: string | null = null;
  // The deadline is on the app's clock: real time plus its offset, which a test clock moves forward (a signal).
  let offsetMs = input.offsetMs ?? 0;
  let moved = 0;
  setHandler(reservationExpiryDef.signals.settled, (status) => {
    settledAs = status;
  });
  setHandler(reservationExpiryDef.signals.clockMoved, (offset) => {
    if (offset > offsetMs) {
      offsetMs = offset;
      moved++;
    }
  });
  setHandler(reservationExpiryDef.queries.state, () => state);
  const what = `**${input.amount}** of **${input.entitlementId}** for account **${input.accountId}** (app ${input.appId})`;
  setCurrentDetails(
    `Reservation **${input.reservationId}** holds ${what} until ${input.expiresAt}. Unless it is committed or ` +
      'released before then, this workflow releases the hold at that time.',
  );
  for (let waitMs = Date.parse(input.expiresAt) - (Date.now() + offsetMs); waitMs > 0;) {
    const seen = moved;
    if (await condition(() => settledAs !== null || moved !== seen, waitMs)) {
      if (settledAs !== null) {
        state.phase = 'done';
        state.outcome = 'settled';
        setCurrentDetails(`Reservation **${input.reservationId}** (${what}) was ${settledAs} before its deadline.`);
        return state;
      }
    }
    waitMs = Date.parse(input.expiresAt) - (Date.now() + offsetMs);
  }
  state.phase = 'expiring';
  setCurrentDetails(
    `Releasing reservation **${input.reservationId}** (${what}): its deadline ${input.expiresAt} passed.`,
  );
  const { expired } = await expireReservation(input);
  state.phase = 'done';
  state.outcome = expired ? 'expired' : 'settled';
  setCurrentDetails(
    expired
      ? `Released reservation **${input.reservationId}** (${what}) at its deadline ${input.expiresAt}.`
      : `Reservation **${input.reservationId}** (${what}) had already been committed or released.`,
  );
  return state;
}
