// Presenters: entities to the spec's JSON, pure, beside the schemas they produce.
import type { z } from 'zod';
import { iso } from '../time.js';
import { type IPaymentConnection } from './payments.entities.js';
import type * as S from './payments.schemas.js';

export function presentConnection(c: IPaymentConnection | null): z.input<typeof S.connectionSchema> {
  if (!c)
    return {
      connected: false as const,
      provider: 'paypal',
      env: null,
      client_id: null,
      webhook: null,
      connected_at: null,
    };
  return {
    connected: true as const,
    provider: c.provider,
    env: c.env,
    client_id: c.clientId,
    webhook: c.webhookId ? { id: c.webhookId, url: c.webhookUrl ?? null } : null,
    connected_at: iso(c.createdAt),
  };
}
