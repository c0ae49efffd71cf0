import { accountParams } from '../accounts/accounts.schemas.js';
import { findAccount } from '../accounts/accounts.service.js';
import { ctxOf, route } from '../http/route.js';
import { timelinePageSchema, timelineQuery } from './timeline.schemas.js';
import { listTimeline } from './timeline.service.js';

export const timelineRoutes = [
  route({
    method: 'GET',
    path: '/apps/:appId/namespaces/:accountId/timeline',
    sdk: 'accounts.timeline',
    auth: ['S'],
    mcp: {
      tool: 'get_account_timeline',
      level: 'R',
      // The route's description already lists what the timeline holds: the model reads when to use it.
      use: "Use it to explain what happened to an account's billing and why.",
    },
    tags: ['Accounts'],
    summary: "The account's billing timeline, newest first",
    description:
      'Every intent (who asked for a change, pause, resume, cancellation, save offer), refusal (and why), fact (a ' +
      "provider notification, the buyer back from approving), date the account's actor woke up at (renewals, pause " +
      'ends, scheduled changes, incentive ends, dunning) and outcome (each billing event sent, with what was ' +
      'charged), with the workflow that ran it and its Temporal UI page. Kept while the account exists. Pass ' +
      '`next_cursor` back as `cursor` for the next page.',
    params: accountParams,
    query: timelineQuery,
    response: timelinePageSchema,
    handler: async (s) => {
      await findAccount(s.em, s.app!.id, s.params.accountId);
      return listTimeline(ctxOf(s), s.params.accountId, s.query);
    },
  }),
];
