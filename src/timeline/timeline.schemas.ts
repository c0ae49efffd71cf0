import { z } from 'zod';
import { cursorPageSchema, cursorQuery } from '../http/pagination.js';

export const TIMELINE_KINDS = ['intent', 'refusal', 'fact', 'timer', 'outcome'] as const;

export const requesterSchema = z.object({
  kind: z.enum(['secret_key', 'admin_key', 'account_token', 'publishable_key', 'person', 'mcp', 'system']),
  id: z.string().nullable(),
  name: z.string().nullable(),
});

export const timelineEntrySchema = z.object({
  id: z.string().describe('Increasing within the account: a later line has a larger id.'),
  at: z.string().describe('When it was recorded (real time).'),
  app_time: z.string().describe("The app's time then: differs from `at` once a test clock was moved."),
  kind: z
    .enum(TIMELINE_KINDS)
    .describe(
      '`intent`: someone asked for a change; `refusal`: it was refused; `fact`: something arrived (a provider ' +
        'notification); `timer`: the account actor woke up at one of its dates; `outcome`: an event the change emitted.',
    ),
  type: z.string().describe('The intent (`change`, `pause`, ...), the provider event, the timer, or the event type.'),
  summary: z.string(),
  by: requesterSchema.nullable().describe('Who asked (intents and refusals), or the provider or the actor.'),
  amount: z
    .object({ value: z.number(), currency: z.string() })
    .nullable()
    .describe('What was charged, when money moved.'),
  event: z.object({ id: z.string(), type: z.string() }).nullable().describe('The event sent (outcomes).'),
  workflow: z
    .object({ id: z.string(), run_id: z.string().nullable(), url: z.string().nullable() })
    .nullable()
    .describe('The workflow that ran it, with its Temporal UI page when the service knows the UI.'),
  data: z.record(z.string(), z.unknown()).nullable(),
});

export const timelineQuery = cursorQuery(50, 200).extend({
  kind: z.enum(TIMELINE_KINDS).optional().describe('Only lines of this kind.'),
});

export const timelinePageSchema = cursorPageSchema(timelineEntrySchema);
