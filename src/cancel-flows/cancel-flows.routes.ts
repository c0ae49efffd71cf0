import { cursorPageSchema } from '../http/pagination.js';
import { z } from 'zod';
import { appIdParams } from '../apps/apps.schemas.js';
import { ctxOf, route, type Scope } from '../http/route.js';
import { deletedSchema } from '../http/schemas.js';
import * as S from './cancel-flows.schemas.js';
import * as flows from './flows.service.js';
import * as sessions from './sessions.service.js';
import * as outcomes from './outcomes.service.js';

const tags = ['Cancel flows'];
const sessionTags = ['Cancel sessions'];
const session = S.sessionSchema;

type SessionScope<B> = Scope<z.output<typeof S.sessionParams>, Record<string, never>, B>;

/** POST /apps/:appId/cancel-sessions/:sessionId/<name>: one move of a session (S or its account's token). */
function action<BS extends z.ZodType = z.ZodObject<Record<string, never>>>(
  name: string,
  summary: string,
  handler: (s: SessionScope<z.output<BS>>) => Promise<z.input<typeof session>>,
  opts: { body?: BS; description?: string; provider?: boolean } = {},
) {
  return route({
    method: 'POST',
    path: `/apps/:appId/cancel-sessions/:sessionId/${name}`,
    sdk: `cancelSessions.${name}`,
    auth: ['S', 'T'],
    tags: sessionTags,
    summary,
    description: opts.description,
    params: S.sessionParams,
    body: opts.body,
    errors: opts.provider ? [409, 502, 503] : [409],
    response: session,
    handler: handler as (s: SessionScope<unknown>) => Promise<z.input<typeof session>>,
  });
}

export const cancelFlowRoutes = [
  route({
    method: 'GET',
    path: '/apps/:appId/cancel-flows',
    sdk: 'cancelFlows.list',
    auth: ['S'],
    tags,
    summary: 'Every cancel flow, with sessions and saves in the last 30 days',
    params: appIdParams,
    response: z.array(S.flowListItemSchema),
    handler: (s) => flows.listFlows(ctxOf(s)),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/cancel-flows/capabilities',
    sdk: 'cancelFlows.capabilities',
    auth: ['S'],
    tags,
    summary: 'Whether dynamic (model-chosen) offers and external-workflow pauses are configured',
    params: appIdParams,
    response: S.capabilitiesSchema,
    handler: (s) => flows.capabilities(ctxOf(s)),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/cancel-flows',
    sdk: 'cancelFlows.create',
    auth: ['S'],
    tags,
    summary: 'Create a cancel flow (from a template when no steps are sent)',
    description:
      'Without `id` the flow is `default` (the flow sessions use when none is named). Without `steps` it starts ' +
      'from a template: a reason question, a save offer chosen by the answer, and a confirm step. New flows are ' +
      '`draft` unless `status` says `active`. Steps are validated as a whole (400 naming the step).',
    params: appIdParams,
    body: S.createFlowBody,
    status: 201,
    errors: [409],
    response: S.flowSchema,
    handler: (s) => flows.createFlow(ctxOf(s), s.body),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/cancel-flows/:flowId',
    sdk: 'cancelFlows.get',
    auth: ['S'],
    tags,
    summary: 'A cancel flow',
    params: S.flowParams,
    response: S.flowSchema,
    handler: (s) => flows.getFlow(ctxOf(s), s.params.flowId),
  }),
  route({
    method: 'PATCH',
    path: '/apps/:appId/cancel-flows/:flowId',
    sdk: 'cancelFlows.update',
    auth: ['S'],
    tags,
    summary: 'Change name, status, or the whole step list',
    description:
      '`steps` replaces the whole list and is validated as a whole. Open sessions keep the steps they started with.',
    params: S.flowParams,
    body: S.updateFlowBody,
    response: S.flowSchema,
    handler: (s) => flows.updateFlow(ctxOf(s), s.params.flowId, s.body),
  }),
  route({
    method: 'DELETE',
    path: '/apps/:appId/cancel-flows/:flowId',
    sdk: 'cancelFlows.delete',
    auth: ['S'],
    tags,
    summary: 'Delete a cancel flow (its sessions are kept)',
    params: S.flowParams,
    response: deletedSchema,
    handler: (s) => flows.deleteFlow(ctxOf(s), s.params.flowId),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/cancel-flows/:flowId/stats',
    sdk: 'cancelFlows.stats',
    auth: ['S'],
    tags,
    summary: 'Save rate, revenue kept, reasons and offer results over `days` (default 30)',
    params: S.flowParams,
    query: S.statsQuery,
    response: S.flowStatsSchema,
    handler: (s) => flows.flowStats(ctxOf(s), s.params.flowId, s.query.days),
  }),
  route({
    method: 'POST',
    path: '/apps/:appId/cancel-flows/:flowId/preview-offer',
    // Stores nothing.
    writes: false,
    sdk: 'cancelFlows.previewOffer',
    auth: ['S'],
    tags,
    summary: 'The offer a customer would get for a set of answers, without a session',
    description:
      'With `account`, the offer is checked against that account (and may be chosen by the model when dynamic ' +
      'offers are on); without it, the first static offer matching the answers. A step or answer the flow does not ' +
      'have is a 404, a step of the wrong kind a 409.',
    params: S.flowParams,
    body: S.previewBody,
    errors: [409],
    response: S.previewOfferSchema,
    handler: (s) => flows.previewOffer(ctxOf(s), s.params.flowId, s.body),
  }),

  route({
    method: 'POST',
    path: '/apps/:appId/cancel-sessions',
    sdk: 'cancelSessions.start',
    auth: ['S', 'T'],
    tags: sessionTags,
    summary: 'Start a cancel session',
    description:
      'With an account token the account comes from the token (naming another is 403) and only active flows start. ' +
      'Without `flow`: `default`, else the first active flow. An offer step with no offer for the account is ' +
      'skipped.',
    params: appIdParams,
    body: S.startBody,
    status: 201,
    errors: [403],
    response: session,
    handler: (s) => sessions.startSession(ctxOf(s), s.caller, s.body),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/cancel-sessions',
    sdk: 'cancelSessions.list',
    auth: ['S'],
    tags: sessionTags,
    summary: 'Cancel sessions, newest first',
    description: 'Pass `next_cursor` back as `cursor` for the next page (null on the last).',
    params: appIdParams,
    query: S.listSessionsQuery,
    response: cursorPageSchema(session),
    handler: (s) => sessions.listSessions(ctxOf(s), s.query),
  }),
  route({
    method: 'GET',
    path: '/apps/:appId/cancel-sessions/:sessionId',
    sdk: 'cancelSessions.get',
    auth: ['S', 'T'],
    tags: sessionTags,
    summary: 'A cancel session',
    params: S.sessionParams,
    response: session,
    handler: (s) => sessions.getSession(ctxOf(s), s.caller, s.params.sessionId),
  }),
  action(
    'answer',
    'Answer the current question (or move past a text step)',
    (s) => sessions.answerStep(ctxOf(s), s.caller, s.params.sessionId, s.body),
    {
      body: S.answerBody,
      description: '`step` must equal the current step (else 409). The answer may branch to another step.',
    },
  ),
  action('back', 'One step back', (s) => sessions.goBack(ctxOf(s), s.caller, s.params.sessionId)),
  action('decline', 'Turn down the offer and go on', (s) =>
    sessions.declineOffer(ctxOf(s), s.caller, s.params.sessionId),
  ),
  action(
    'accept',
    'Accept the offer: it is applied, and the session is saved',
    (s) =>
      outcomes.acceptThroughActor(ctxOf(s), s.caller, s.requestId, s.params.sessionId, { ...s.body, origin: s.origin }),
    {
      body: S.acceptBody,
      provider: true,
      description:
        'Discounts and downgrades revise the provider subscription and return `approve_url` (a discount applies once ' +
        "the provider reports the approval, a downgrade at the renewal); a pause is resumed by the account's actor; " +
        "an incentive is set with `incentive_expires_at`. Runs through the account's actor: an offer that meets a " +
        'change waiting or scheduled, a pause or a failed payment is a 409 naming it (`reason`, `pending`, `next`).',
    },
  ),
  action(
    'cancel',
    'Cancel from the confirm step',
    (s) => outcomes.cancelThroughActor(ctxOf(s), s.caller, s.requestId, s.params.sessionId),
    {
      provider: true,
      description:
        'Cancels the subscription at the provider and moves the account to the free plan; an account billed ' +
        'elsewhere is only marked (`result.billing` is `external`).',
    },
  ),
  action('close', 'Leave the flow: the session is abandoned', (s) =>
    sessions.closeSession(ctxOf(s), s.caller, s.params.sessionId),
  ),
];
