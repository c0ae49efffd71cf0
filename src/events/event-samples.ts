// What each list of event types is made of (its type, description and sample, for GET /event-types, the OpenAPI
// document and the SDKs), and the sample records the lists share: the account every sample carries, presented by the
// same presenter real events use. The lists are by domain (*-events.ts here); event-types.ts joins them.
import { presentAccountDetail } from '../accounts/accounts.present.js';
import type { IAccount } from '../accounts/accounts.entities.js';

export interface EventTypeInfo {
  type: string;
  description: string;
  sample: () => Record<string, unknown>;
}

// Sample records, presented by the same presenters real events use.
export const at = new Date('2026-01-15T10:30:00.000Z');
export const account = {
  appId: 'app_3kTq8ZbWn2cVx9LpRm4s',
  id: 'user_8412',
  name: 'Ada Lovelace',
  planId: 'pro',
  incentiveId: null,
  incentiveExpiresAt: null,
  offerId: null,
  createdAt: at,
  updatedAt: at,
} as unknown as IAccount;
export const sampleAccount = (over: Partial<IAccount> = {}) =>
  presentAccountDetail({ ...account, ...over } as IAccount, ['priority'], null);
