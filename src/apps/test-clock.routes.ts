import { z } from 'zod';
import { ctxOf, Reply, route } from '../http/route.js';
import { appIdParams } from './apps.schemas.js';
import { advanceClock, readClock } from './test-clock.service.js';

const tags = ['Test clock'];
const clockSchema = z.object({
  now: z.string().describe("The app's time: real time plus `offset_ms`."),
  offset_ms: z.number().int().min(0).describe('How far the clock was moved ahead of real time (0: never moved).'),
  live: z.boolean().describe('A live app (live payments, or the demo) has no test clock: its time is real time.'),
});

export const testClockRoutes = [
  route({
    method: 'GET',
    path: '/apps/:appId/test-clock',
    sdk: 'testClock.get',
    auth: ['S'],
    tags,
    summary: "The app's clock",
    description:
      "An app that is not live (payments not connected, PayPal's sandbox, or the local stand-in; never the demo, " +
      'never live payments) has a test clock that can be moved forward; everything time-based follows it.',
    params: appIdParams,
    response: clockSchema,
    handler: (s) => readClock(ctxOf(s)),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/test-clock/advance',
    sdk: 'testClock.advance',
    auth: ['S'],
    tags,
    summary: "Move the app's clock forward, running every date due by then",
    description:
      "Steps through the app's dates up to `to` in order (renewals, the provider's payment retries, ends of grace " +
      'periods and pauses, cancellations at the period end, approvals that expire, incentive ends), looking each next ' +
      'one up again after the step before: at each, the PayPal stand-in bills the cycles and retries due by then and ' +
      "sends its notifications, the app's clock moves there, and every account actor runs what is due (a renewal " +
      'applies a scheduled change and counts down a save-offer discount; a failed payment starts dunning). Then ' +
      'reservation and checkout expiry follow the new time. 200 once all of it ran; 202 when that takes longer than ' +
      "`TEST_CLOCK_WAIT_MS` (20 s): it goes on, and the clock's `now` reaches `to` within a minute. With PayPal's own " +
      "sandbox only offerkit's dates move (PayPal bills at its own pace). 409 `live_app` for live apps and the demo, " +
      '409 `advancing` while another advance of the app runs; 400 when `to` is not after `now` or more than five ' +
      'years after it; 502 when the provider fails.',
    params: appIdParams,
    body: z.object({ to: z.iso.datetime({ offset: true }).describe('The app time to move to (ISO 8601).') }),
    errors: [409, 502],
    response: clockSchema.extend({ pending: z.boolean().describe('True on a 202: dates are still running.') }),
    replies: {
      202: {
        description: 'Still running after `TEST_CLOCK_WAIT_MS` (20 s): the clock reaches `to` within a minute',
        schema: clockSchema.extend({ pending: z.boolean() }),
      },
    },
    handler: async (s) => {
      const r = await advanceClock(ctxOf(s), new Date(s.body.to));
      return r.status === 200 ? r.body : new Reply(202, r.body);
    },
  }),
];
