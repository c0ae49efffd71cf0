// The PayPal stand-in's identity: the client-credentials token endpoint (`POST /v1/oauth2/token`) and the check every
// other API call passes first (the merchant's bearer token, with the test switches on the next calls applied before it
// and PayPal-Request-Id's replay of a POST after it).
import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type Router from '@koa/router';
import type { Context } from 'koa';
import { body, paypalError, takeFailure, type StandInArea, type StandInCore } from './paypal-standin-core.js';

/** The check before every API call but the token endpoint's: the merchant's token (`ctx.state.clientId`). */
export function authentication(core: StandInCore): StandInArea['auth'] {
  return async (ctx: Context, next: () => Promise<unknown>) => {
    core.received.push({ method: ctx.method, path: ctx.path });
    if (core.received.length > 10_000) core.received.shift();
    const delay = core.delays.findIndex((d) => ctx.path.includes(d.pathIncludes));
    if (delay >= 0) {
      const [{ ms }] = core.delays.splice(delay, 1);
      await new Promise((resolve) => core.later(ms, () => resolve(undefined)));
    }
    const held = core.holds.findIndex((h) => h.route === `${ctx.method} ${ctx.path}`);
    if (held >= 0) {
      const [h] = core.holds.splice(held, 1);
      h.arrived();
      await h.released;
    }
    const m = /^Bearer (.+)$/.exec(ctx.get('authorization'));
    const token = m && core.state.tokens[m[1]];
    const failure = takeFailure(core, token ? token.clientId : undefined);
    if (failure) return paypalError(ctx, failure.status, failure.name, failure.message);
    if (!token || token.expiresAt < Date.now())
      return paypalError(
        ctx,
        401,
        'AUTHENTICATION_FAILURE',
        'Authentication failed due to invalid authentication credentials or a missing Authorization header.',
      );
    ctx.state.clientId = token.clientId;
    // PayPal-Request-Id: the same POST twice answers the first result.
    const key = ctx.method === 'POST' ? ctx.get('paypal-request-id') : '';
    if (key && core.state.idempotency[`${token.clientId}:${key}`]) {
      const saved = core.state.idempotency[`${token.clientId}:${key}`];
      ctx.status = saved.status;
      ctx.body = saved.body;
      return;
    }
    await next();
    if (key && ctx.status < 300)
      core.state.idempotency[`${token.clientId}:${key}`] = { status: ctx.status, body: ctx.body };
    core.save();
  };
}

/** `POST /v1/oauth2/token`: HTTP Basic with a client id and secret the stand-in accepts, for a 9-hour token. */
export function tokenRoute(router: Router, core: StandInCore) {
  router.post('/v1/oauth2/token', (ctx) => {
    const m = /^Basic (.+)$/.exec(ctx.get('authorization'));
    const [clientId, secret] = m ? Buffer.from(m[1], 'base64').toString().split(':') : [];
    const failure = takeFailure(core, clientId);
    if (failure) return paypalError(ctx, failure.status, failure.name, failure.message);
    const expected = clientId ? core.state.credentials[clientId] : undefined;
    const ok =
      expected !== undefined &&
      secret !== undefined &&
      expected.length === secret.length &&
      timingSafeEqual(Buffer.from(expected), Buffer.from(secret));
    if (!ok || body(ctx).grant_type !== 'client_credentials') {
      ctx.status = 401;
      ctx.body = { error: 'invalid_client', error_description: 'Client Authentication failed' };
      return;
    }
    const token = `A21AA${randomBytes(24).toString('base64url')}`;
    core.state.tokens[token] = { clientId, expiresAt: Date.now() + 32_400_000 };
    ctx.body = {
      scope: 'https://uri.paypal.com/services/subscriptions',
      access_token: token,
      token_type: 'Bearer',
      app_id: `APP-${clientId.slice(0, 8)}`,
      expires_in: 32400,
      nonce: randomUUID(),
    };
  });
}
