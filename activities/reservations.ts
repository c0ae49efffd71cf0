import { expireReservation } from '../src/usage/reservations.service.js';
import type { Activities } from '../workflows/contracts/activities.js';
import type { Deps } from '../src/deps.js';

export function reservationActivities(deps: Deps): Pick<Activities, 'expireReservation'> {
  return {
    /** Idempotent: releases the hold only while the reservation is still held. */
    expireReservation: (input) => expireReservation(deps, input),
  };
}
