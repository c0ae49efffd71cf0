import { createHash } from 'node:crypto';
import type { z } from 'zod';
import type { Ctx } from '../context.js';
import type { Config } from '../config.js';
import { AppError, conflict, providerError } from '../errors.js';
import { isPublicAddress } from '../webhooks/url-policy.js';
import { PaymentConnection, type IPaymentConnection } from './payments.entities.js';
import type * as S from './payments.schemas.js';
import { PAYPAL_BASE_URLS, PayPalProvider } from './paypal.js';
import { ProviderError, type PaymentProvider } from './provider.js';
import { presentConnection } from './payments.present.js';

/** Provider notifications the service subscribes to when it registers its webhook. */
export const PROVIDER_EVENT_TYPES = [
  'BILLING.SUBSCRIPTION.ACTIVATED',
  'BILLING.SUBSCRIPTION.UPDATED',
  'BILLING.SUBSCRIPTION.CANCELLED',
  'BILLING.SUBSCRIPTION.SUSPENDED',
  'BILLING.SUBSCRIPTION.EXPIRED',
  'BILLING.SUBSCRIPTION.PAYMENT.FAILED',
  'PAYMENT.SALE.COMPLETED',
  'PAYMENT.CAPTURE.COMPLETED',
  // Credit packs (src/credits/packs-payments.service.ts): a buyer approved a pack's order (capture it), and a refund
  // of a captured payment (take back what is left of the pack's credits).
  'CHECKOUT.ORDER.APPROVED',
  'PAYMENT.CAPTURE.REFUNDED',
];

export function providerBaseUrl(config: Config, env: 'sandbox' | 'live'): string {
  return config.PAYPAL_BASE_URL ?? PAYPAL_BASE_URLS[env];
}

const providers = new Map<string, PaymentProvider>();

/** One provider client per connection (it caches its OAuth token). */
export function providerFor(
  config: Config,
  conn: Pick<IPaymentConnection, 'clientId' | 'clientSecret' | 'env'>,
): PaymentProvider {
  const baseUrl = providerBaseUrl(config, conn.env);
  const key = createHash('sha256').update(`${baseUrl}\n${conn.clientId}\n${conn.clientSecret}`).digest('hex');
  let p = providers.get(key);
  if (!p) {
    p = new PayPalProvider({ clientId: conn.clientId, clientSecret: conn.clientSecret, baseUrl });
    providers.set(key, p);
  }
  return p;
}

/** A provider error as the HTTP answer: 502 `<Provider>: <message>`. Anything else passes through. */
export function asHttpError(err: unknown): unknown {
  if (err instanceof ProviderError) return Object.assign(providerError(err.provider, err.message), { cause: err });
  return err;
}

/**
 * Whether an error is the provider refusing for good (a 4xx: no such subscription, a state it will not leave), as
 * opposed to an outage or a 5xx that a later try may get past.
 */
export function providerRefused(err: unknown): boolean {
  const cause = (err as { cause?: unknown } | null)?.cause ?? err;
  return cause instanceof ProviderError && cause.status !== null && cause.status >= 400 && cause.status < 500;
}

export async function withProvider<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw asHttpError(err);
  }
}

export async function getConnection(ctx: Ctx) {
  return presentConnection(await ctx.em.findOne(PaymentConnection, { appId: ctx.app.id }));
}

/**
 * Where a buyer lands after the provider when the caller names no page and the app has no `checkout_url`: the
 * service's own return page (`GET /apps/:appId/checkouts/return`), which completes the checkout at once and tells the
 * buyer they can go back to the app; `cancelled` marks the page a buyer reaches by cancelling at the provider.
 * Null when the service does not know its public origin.
 */
export function hostedReturnUrl(origin: string | undefined, appId: string, outcome: 'approved' | 'cancelled') {
  if (!origin) return null;
  const url = `${origin.replace(/\/$/, '')}/apps/${encodeURIComponent(appId)}/checkouts/return`;
  return outcome === 'cancelled' ? `${url}?outcome=cancelled` : url;
}

/** The app's provider, or null when payments are not connected. */
export async function connectedProvider(ctx: Pick<Ctx, 'em' | 'deps' | 'app'>): Promise<PaymentProvider | null> {
  const connection = await ctx.em.findOne(PaymentConnection, { appId: ctx.app.id });
  return connection ? providerFor(ctx.deps.config, connection) : null;
}

/** The app's provider, or 409 `payment provider not connected`. */
export async function requireProvider(
  ctx: Ctx,
): Promise<{ connection: IPaymentConnection; provider: PaymentProvider }> {
  const connection = await ctx.em.findOne(PaymentConnection, { appId: ctx.app.id });
  if (!connection) throw conflict('payment provider not connected');
  return { connection, provider: providerFor(ctx.deps.config, connection) };
}

/**
 * Checks the credentials with the provider, then registers the service's notification URL when the
 * provider can reach it (a public origin, or a provider at a non-PayPal base URL such as the local
 * stand-in), and saves the connection. Reconnecting replaces it.
 */
export async function connect(ctx: Ctx, input: z.output<typeof S.connectBody>, origin: string) {
  const provider = providerFor(ctx.deps.config, {
    clientId: input.client_id,
    clientSecret: input.client_secret,
    env: input.env,
  });
  try {
    await provider.verifyCredentials();
  } catch (err) {
    // The provider's refusal of well-formed credentials: a 422 (the request is valid, the pair does not work), with
    // our words (what to check) beside theirs, kept apart in `provider_message` for a program to show.
    if (err instanceof ProviderError && (err.status === 401 || err.status === 400)) {
      throw new AppError(422, `${err.provider}: ${err.message} (check client_id, client_secret and env)`, {
        reason: 'credentials_refused',
        provider_message: err.message,
      });
    }
    throw asHttpError(err);
  }
  const webhookUrl = `${origin}/payments/webhooks/${ctx.app.id}`;
  const host = new URL(origin).hostname.replace(/^\[(.*)\]$/, '$1');
  const baseUrl = providerBaseUrl(ctx.deps.config, input.env);
  const realPayPal = Object.values(PAYPAL_BASE_URLS).includes(baseUrl as never);
  const reachable = !realPayPal || (host !== 'localhost' && (!/^[\d.:]+$/.test(host) || isPublicAddress(host)));
  let webhookId: string | null = null;
  if (reachable) {
    webhookId = await withProvider(async () => {
      const existing = (await provider.listWebhooks()).find((w) => w.url === webhookUrl);
      return existing ? existing.id : (await provider.registerWebhook(webhookUrl, PROVIDER_EVENT_TYPES)).id;
    });
  }
  let c = await ctx.em.findOne(PaymentConnection, { appId: ctx.app.id });
  if (!c)
    c = ctx.em.create(PaymentConnection, {
      appId: ctx.app.id,
      provider: 'paypal',
      env: input.env,
      clientId: input.client_id,
      clientSecret: input.client_secret,
      providerRefs: { productId: null, plans: {} },
    });
  // Other credentials may mean another provider account: its product and plans are made anew.
  if (c.clientId !== input.client_id || c.env !== input.env) c.providerRefs = { productId: null, plans: {} };
  c.env = input.env;
  c.clientId = input.client_id;
  c.clientSecret = input.client_secret;
  c.webhookId = webhookId;
  c.webhookUrl = webhookId ? webhookUrl : null;
  await ctx.em.flush();
  return presentConnection(c);
}

/** Forgets the credentials. Subscriptions keep billing at the provider; nothing is cancelled. */
export async function disconnect(ctx: Ctx) {
  const c = await ctx.em.findOne(PaymentConnection, { appId: ctx.app.id });
  if (!c) throw conflict('payment provider not connected');
  await ctx.em.nativeDelete(PaymentConnection, { appId: ctx.app.id });
  return presentConnection(null);
}

/**
 * The provider billing plan for a plan at its regular price (optionally after a discounted price for
 * a number of cycles, as a cancel-flow discount), created once per app and terms.
 */
export async function ensureRegularProviderPlan(
  ctx: Ctx,
  conn: IPaymentConnection,
  provider: PaymentProvider,
  plan: { id: string; name: string },
  terms: { interval: 'month' | 'year'; currency: string; price: number; introPrice?: number; introCycles?: number },
): Promise<string> {
  const intro = terms.introCycles ? `:${terms.introPrice}x${terms.introCycles}` : '';
  const key = `${plan.id}:${terms.interval}:${terms.currency}:${terms.price}${intro}`;
  const refs = { productId: conn.providerRefs?.productId ?? null, plans: { ...(conn.providerRefs?.plans ?? {}) } };
  if (refs.plans[key]) return refs.plans[key];
  await withProvider(async () => {
    refs.productId ??= (await provider.createProduct({ name: ctx.app.name }, `${ctx.app.id}:regular:product`)).id;
    refs.plans[key] = (
      await provider.createPlan(
        {
          productId: refs.productId,
          name: `${plan.name} (${terms.interval}ly${terms.introCycles ? `, ${terms.introPrice} for ${terms.introCycles} cycles` : ''})`,
          interval: terms.interval,
          price: terms.price,
          currency: terms.currency,
          ...(terms.introCycles ? { introPrice: terms.introPrice, introCycles: terms.introCycles } : {}),
        },
        `${ctx.app.id}:regular:${key}`,
      )
    ).id;
  });
  conn.providerRefs = refs;
  await ctx.em.flush();
  return refs.plans[key];
}
