import type { EntityManager } from '@mikro-orm/postgresql';
import { conflict, isUniqueViolation } from '../errors.js';

/** Flushes; a unique-constraint clash (an id that exists) becomes 409 with the given message. */
export async function flushOrConflict(em: EntityManager, message: string): Promise<void> {
  try {
    await em.flush();
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict(message);
    throw err;
  }
}
