import { expireReservation } from '../src/usage/reservations.service.js';
import type { ReservationExpiryInput } from '../workflows/shared.js';
import type { ActivityDeps } from './index.js';

export function reservationActivities(deps: ActivityDeps) {
  return {
    /** Idempotent: releases the hold only while the reservation is still held. */
    expireReservation: (input: ReservationExpiryInput) => expireReservation(deps, input),
  };
}
