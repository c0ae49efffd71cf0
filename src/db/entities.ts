import { App } from '../apps/apps.entities.js';
import { OutboxEntry } from '../temporal/outbox.entities.js';

/** Every entity, registered explicitly (no folder discovery). */
export const entities = [App, OutboxEntry];
