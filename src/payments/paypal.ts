import { request } from 'undici';
import {
  ProviderError,
  type Interval,
  type PaymentProvider,
  type ProviderPayment,
  type ProviderOrder,
  type ProviderSubscription,
} from './provider.js';

export const PAYPAL_BASE_URLS = {
  sandbox: 'https://api-m.sandbox.paypal.com',
  live: 'https://api-m.paypal.com',
} as const;

interface Link {
  rel: string;
  href: string;
}
const approveLink = (links?: Link[]) =>
  links?.find((l) => l.rel === 'approve' || l.rel === 'payer-action')?.href ?? null;
const money = (value: number) => value.toFixed(2);

/** The headers PayPal signs a notification with (each is needed to verify it). */
const SIGNATURE_HEADERS = [
  'paypal-auth-algo',
  'paypal-cert-url',
  'paypal-transmission-id',
  'paypal-transmission-sig',
  'paypal-transmission-time',
];

/**
 * PayPal REST: OAuth2 client credentials, catalog products, billing plans and subscriptions,
 * orders, webhooks and their verification. The base URL is configurable (sandbox, live, or a
 * stand-in that speaks the same API). POSTs carry `PayPal-Request-Id` for idempotency.
 */
export class PayPalProvider implements PaymentProvider {
  readonly name = 'PayPal';
  private token: { value: string; expiresAt: number } | null = null;

  constructor(private readonly opts: { clientId: string; clientSecret: string; baseUrl: string; timeoutMs?: number }) {}

  private async accessToken(force = false): Promise<string> {
    if (!force && this.token && this.token.expiresAt > Date.now() + 60_000) return this.token.value;
    const res = await this.send('POST', '/v1/oauth2/token', 'grant_type=client_credentials', {
      authorization: `Basic ${Buffer.from(`${this.opts.clientId}:${this.opts.clientSecret}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    });
    const body = res.body as { access_token?: string; expires_in?: number };
    if (res.status !== 200 || !body.access_token) throw this.error(res.status, res.body);
    this.token = { value: body.access_token, expiresAt: Date.now() + (body.expires_in ?? 3600) * 1000 };
    return this.token.value;
  }

  private async send(method: string, path: string, body: string | undefined, headers: Record<string, string>) {
    try {
      const res = await request(new URL(path, this.opts.baseUrl), {
        method: method as 'GET',
        headers: { accept: 'application/json', ...headers },
        body,
        signal: AbortSignal.timeout(this.opts.timeoutMs ?? 20_000),
      });
      const text = await res.body.text();
      let parsed: unknown = null;
      try {
        parsed = text ? JSON.parse(text) : null;
      } catch {
        parsed = { message: text.slice(0, 200) };
      }
      return { status: res.statusCode, body: parsed };
    } catch (err) {
      throw new ProviderError(this.name, `could not reach the API (${(err as Error).message})`, null);
    }
  }

  private error(status: number, body: unknown): ProviderError {
    const b = (body ?? {}) as {
      message?: string;
      error_description?: string;
      name?: string;
      error?: string;
      details?: { issue?: string; description?: string }[];
    };
    const detail = b.details?.[0];
    const message = [
      b.message ?? b.error_description ?? `HTTP ${status}`,
      detail ? `(${detail.issue}${detail.description ? `: ${detail.description}` : ''})` : '',
    ]
      .filter(Boolean)
      .join(' ');
    return new ProviderError(this.name, message, status, b.name ?? b.error ?? null);
  }

  private async call<T>(method: string, path: string, payload?: unknown, idempotencyKey?: string): Promise<T> {
    for (let tries = 0; ; tries++) {
      const headers: Record<string, string> = {
        authorization: `Bearer ${await this.accessToken(tries > 0)}`,
        'content-type': 'application/json',
      };
      if (idempotencyKey) headers['paypal-request-id'] = idempotencyKey;
      const res = await this.send(method, path, payload === undefined ? undefined : JSON.stringify(payload), headers);
      if (res.status === 401 && tries === 0) continue; // token expired or revoked: fetch a new one once
      if (res.status < 200 || res.status >= 300) throw this.error(res.status, res.body);
      return res.body as T;
    }
  }

  async verifyCredentials(): Promise<void> {
    await this.accessToken(true);
  }

  async createProduct(input: { name: string; description?: string }, idempotencyKey: string) {
    const r = await this.call<{ id: string }>(
      'POST',
      '/v1/catalogs/products',
      { name: input.name, description: input.description, type: 'SERVICE', category: 'SOFTWARE' },
      idempotencyKey,
    );
    return { id: r.id };
  }

  async createPlan(
    input: {
      productId: string;
      name: string;
      interval: Interval;
      price: number;
      currency: string;
      introPrice?: number;
      introCycles?: number;
    },
    idempotencyKey: string,
  ) {
    const frequency = { interval_unit: input.interval === 'month' ? 'MONTH' : 'YEAR', interval_count: 1 };
    const cycles = [];
    if (input.introCycles && input.introPrice !== undefined) {
      cycles.push({
        frequency,
        tenure_type: 'TRIAL',
        sequence: 1,
        total_cycles: input.introCycles,
        pricing_scheme: { fixed_price: { value: money(input.introPrice), currency_code: input.currency } },
      });
    }
    cycles.push({
      frequency,
      tenure_type: 'REGULAR',
      sequence: cycles.length + 1,
      total_cycles: 0,
      pricing_scheme: { fixed_price: { value: money(input.price), currency_code: input.currency } },
    });
    const r = await this.call<{ id: string }>(
      'POST',
      '/v1/billing/plans',
      {
        product_id: input.productId,
        name: input.name,
        status: 'ACTIVE',
        billing_cycles: cycles,
        payment_preferences: { auto_bill_outstanding: true, payment_failure_threshold: 3 },
      },
      idempotencyKey,
    );
    return { id: r.id };
  }

  private toSubscription(r: {
    id: string;
    status: string;
    plan_id: string;
    custom_id?: string;
    billing_info?: {
      next_billing_time?: string;
      last_payment?: { time?: string };
      failed_payments_count?: number;
      last_failed_payment?: { time?: string; next_payment_retry_time?: string };
      outstanding_balance?: { value?: string; currency_code?: string };
    };
    links?: Link[];
  }): ProviderSubscription {
    const b = r.billing_info;
    const owed = b?.outstanding_balance?.value ? Number(b.outstanding_balance.value) : 0;
    return {
      id: r.id,
      status: r.status,
      planId: r.plan_id,
      customId: r.custom_id ?? null,
      nextBillingTime: b?.next_billing_time ?? null,
      lastPaymentAt: b?.last_payment?.time ?? null,
      approveUrl: approveLink(r.links),
      failedPaymentsCount: b?.failed_payments_count ?? 0,
      lastFailedPaymentAt: b?.last_failed_payment?.time ?? null,
      nextPaymentRetryAt: b?.last_failed_payment?.next_payment_retry_time ?? null,
      outstandingBalance: owed > 0 ? { amount: owed, currency: b!.outstanding_balance!.currency_code ?? 'USD' } : null,
    };
  }

  async createSubscription(
    input: { planId: string; customId: string; returnUrl: string; cancelUrl: string; email?: string },
    idempotencyKey: string,
  ) {
    const r = await this.call<Parameters<PayPalProvider['toSubscription']>[0]>(
      'POST',
      '/v1/billing/subscriptions',
      {
        plan_id: input.planId,
        custom_id: input.customId,
        ...(input.email ? { subscriber: { email_address: input.email } } : {}),
        application_context: {
          return_url: input.returnUrl,
          cancel_url: input.cancelUrl,
          user_action: 'SUBSCRIBE_NOW',
          shipping_preference: 'NO_SHIPPING',
        },
      },
      idempotencyKey,
    );
    return this.toSubscription(r);
  }

  async getSubscription(id: string) {
    return this.toSubscription(await this.call('GET', `/v1/billing/subscriptions/${encodeURIComponent(id)}`));
  }

  async reviseSubscription(id: string, input: { planId: string; returnUrl: string; cancelUrl: string }) {
    const r = await this.call<{ links?: Link[] }>(
      'POST',
      `/v1/billing/subscriptions/${encodeURIComponent(id)}/revise`,
      {
        plan_id: input.planId,
        application_context: { return_url: input.returnUrl, cancel_url: input.cancelUrl, user_action: 'CONTINUE' },
      },
    );
    return { approveUrl: approveLink(r.links) };
  }

  async suspendSubscription(id: string, reason: string) {
    await this.call('POST', `/v1/billing/subscriptions/${encodeURIComponent(id)}/suspend`, { reason });
  }
  async activateSubscription(id: string, reason: string) {
    await this.call('POST', `/v1/billing/subscriptions/${encodeURIComponent(id)}/activate`, { reason });
  }
  async cancelSubscription(id: string, reason: string) {
    await this.call('POST', `/v1/billing/subscriptions/${encodeURIComponent(id)}/cancel`, { reason });
  }

  private toOrder(r: {
    id: string;
    status: string;
    links?: Link[];
    purchase_units?: {
      custom_id?: string;
      payments?: { captures?: { id: string; status: string; amount?: { value: string; currency_code: string } }[] };
    }[];
  }): ProviderOrder {
    const capture = r.purchase_units?.[0]?.payments?.captures?.[0];
    return {
      id: r.id,
      status: r.status,
      approveUrl: approveLink(r.links),
      customId: r.purchase_units?.[0]?.custom_id ?? null,
      capture: capture
        ? {
            id: capture.id,
            status: capture.status,
            amount: Number(capture.amount?.value ?? 0),
            currency: capture.amount?.currency_code ?? '',
          }
        : null,
    };
  }

  async createOrder(
    input: {
      amount: number;
      currency: string;
      customId: string;
      description: string;
      returnUrl: string;
      cancelUrl: string;
    },
    idempotencyKey: string,
  ) {
    const r = await this.call<Parameters<PayPalProvider['toOrder']>[0]>(
      'POST',
      '/v2/checkout/orders',
      {
        intent: 'CAPTURE',
        purchase_units: [
          {
            amount: { currency_code: input.currency, value: money(input.amount) },
            custom_id: input.customId,
            description: input.description,
          },
        ],
        application_context: {
          return_url: input.returnUrl,
          cancel_url: input.cancelUrl,
          shipping_preference: 'NO_SHIPPING',
          user_action: 'PAY_NOW',
        },
      },
      idempotencyKey,
    );
    return this.toOrder(r);
  }

  async getOrder(id: string) {
    return this.toOrder(await this.call('GET', `/v2/checkout/orders/${encodeURIComponent(id)}`));
  }

  async updateOrderAmount(id: string, input: { amount: number; currency: string; description: string }) {
    // JSON Patch on the order's only purchase unit (reference id `default`), as PayPal's Orders v2 API takes it.
    const unit = "/purchase_units/@reference_id=='default'";
    await this.call('PATCH', `/v2/checkout/orders/${encodeURIComponent(id)}`, [
      { op: 'replace', path: `${unit}/amount`, value: { currency_code: input.currency, value: money(input.amount) } },
      { op: 'replace', path: `${unit}/description`, value: input.description },
    ]);
  }

  async captureOrder(id: string, idempotencyKey: string) {
    return this.toOrder(
      await this.call('POST', `/v2/checkout/orders/${encodeURIComponent(id)}/capture`, {}, idempotencyKey),
    );
  }

  // https://developer.paypal.com/docs/api/subscriptions/v1/#subscriptions_capture
  async captureOutstanding(
    id: string,
    input: { amount: number; currency: string; note: string },
    idempotencyKey: string,
  ) {
    // 200 with the transaction (COMPLETED, or DECLINED), or 202 with no body: accepted, its outcome shows in the
    // subscription's transactions and billing info later.
    const r = await this.call<{ id?: string; status?: string } | null>(
      'POST',
      `/v1/billing/subscriptions/${encodeURIComponent(id)}/capture`,
      {
        note: input.note.slice(0, 128),
        capture_type: 'OUTSTANDING_BALANCE',
        amount: { currency_code: input.currency, value: input.amount.toFixed(2) },
      },
      idempotencyKey,
    );
    return { id: r?.id ?? '', status: r?.status ?? 'PENDING' };
  }

  // https://developer.paypal.com/docs/api/subscriptions/v1/#subscriptions_transactions
  async listSubscriptionPayments(id: string, range: { from: Date; to: Date }): Promise<ProviderPayment[]> {
    const q = new URLSearchParams({ start_time: range.from.toISOString(), end_time: range.to.toISOString() });
    const r = await this.call<{
      transactions?: {
        id: string;
        status: string;
        time: string;
        amount_with_breakdown: { gross_amount: { value: string; currency_code: string } };
      }[];
    }>('GET', `/v1/billing/subscriptions/${encodeURIComponent(id)}/transactions?${q}`);
    return (r.transactions ?? []).map((t) => ({
      id: t.id,
      status: t.status,
      amount: Number(t.amount_with_breakdown.gross_amount.value),
      currency: t.amount_with_breakdown.gross_amount.currency_code,
      time: t.time,
    }));
  }

  // https://developer.paypal.com/docs/api/payments/v2/#captures_refund (no amount: the whole capture)
  async refundPayment(paymentId: string, input: { note: string; invoiceId?: string }, idempotencyKey: string) {
    const r = await this.call<{ id: string; status: string }>(
      'POST',
      `/v2/payments/captures/${encodeURIComponent(paymentId)}/refund`,
      { note_to_payer: input.note.slice(0, 255), ...(input.invoiceId ? { invoice_id: input.invoiceId } : {}) },
      idempotencyKey,
    );
    return { id: r.id, status: r.status };
  }

  // Not PayPal's API: offerkit's stand-in serves it (src/dev/paypal-standin.ts); PayPal answers 404 (no test clock).
  async setTestClock(subscriptionIds: string[], now: Date, mode: 'align' | 'advance') {
    if (/(^|\.)paypal\.com$/.test(new URL(this.opts.baseUrl).hostname)) return [];
    try {
      const r = await this.call<{ subscriptions?: { id: string; billed?: number }[] }>('POST', '/v1/dev/clock', {
        subscription_ids: subscriptionIds,
        now: now.toISOString(),
        mode,
      });
      return (r?.subscriptions ?? []).map((s) => ({ id: s.id, billed: s.billed ?? 0 }));
    } catch (err) {
      if (err instanceof ProviderError && err.status === 404) return [];
      throw err;
    }
  }

  async registerWebhook(url: string, eventTypes: string[]) {
    const r = await this.call<{ id: string }>('POST', '/v1/notifications/webhooks', {
      url,
      event_types: eventTypes.map((name) => ({ name })),
    });
    return { id: r.id };
  }

  async listWebhooks() {
    const r = await this.call<{ webhooks: { id: string; url: string }[] }>('GET', '/v1/notifications/webhooks');
    return r.webhooks.map((w) => ({ id: w.id, url: w.url }));
  }

  async verifyNotification(input: { headers: Record<string, string | undefined>; body: unknown; webhookId: string }) {
    const h = (k: string) => input.headers[k] ?? input.headers[k.toLowerCase()];
    // PayPal signs every notification: one without its signature headers is refused without asking PayPal.
    if (SIGNATURE_HEADERS.some((k) => !h(k))) return false;
    const r = await this.call<{ verification_status: string }>('POST', '/v1/notifications/verify-webhook-signature', {
      auth_algo: h('paypal-auth-algo'),
      cert_url: h('paypal-cert-url'),
      transmission_id: h('paypal-transmission-id'),
      transmission_sig: h('paypal-transmission-sig'),
      transmission_time: h('paypal-transmission-time'),
      webhook_id: input.webhookId,
      webhook_event: input.body,
    });
    return r.verification_status === 'SUCCESS';
  }
}
