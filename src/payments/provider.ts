/**
 * What the service needs from a payment provider. The spec's provider is PayPal-shaped: client
 * credentials, billing plans, subscriptions the customer approves at the provider, revisions that
 * need approval, one-time orders, notifications verified by the provider.
 */
export type Interval = 'month' | 'year';

export interface ProviderSubscription {
  id: string;
  /** APPROVAL_PENDING, APPROVED, ACTIVE, SUSPENDED, CANCELLED, EXPIRED */
  status: string;
  planId: string;
  customId: string | null;
  nextBillingTime: string | null;
  lastPaymentAt: string | null;
  approveUrl: string | null;
  /** Dunning as the provider reports it (PayPal `billing_info`): failed cycles, the last failure, what is owed. */
  failedPaymentsCount?: number;
  lastFailedPaymentAt?: string | null;
  nextPaymentRetryAt?: string | null;
  outstandingBalance?: { amount: number; currency: string } | null;
}

export interface ProviderOrder {
  id: string;
  /** CREATED, APPROVED, COMPLETED, VOIDED */
  status: string;
  approveUrl: string | null;
  customId: string | null;
  /** The payment captured for it (PayPal: `purchase_units[0].payments.captures[0]`), once captured. */
  capture?: { id: string; status: string; amount: number; currency: string } | null;
}

/** A payment charged for a subscription cycle (PayPal: a subscription transaction, its id the capture's). */
export interface ProviderPayment {
  id: string;
  /** COMPLETED, DECLINED, PARTIALLY_REFUNDED, PENDING, REFUNDED. */
  status: string;
  amount: number;
  currency: string;
  time: string;
}

export interface PaymentProvider {
  readonly name: string;
  /** Fails (ProviderError) when the credentials are not accepted. */
  verifyCredentials(): Promise<void>;
  createProduct(input: { name: string; description?: string }, idempotencyKey: string): Promise<{ id: string }>;
  createPlan(
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
  ): Promise<{ id: string }>;
  createSubscription(
    input: { planId: string; customId: string; returnUrl: string; cancelUrl: string; email?: string },
    idempotencyKey: string,
  ): Promise<ProviderSubscription>;
  getSubscription(id: string): Promise<ProviderSubscription>;
  reviseSubscription(
    id: string,
    input: { planId: string; returnUrl: string; cancelUrl: string },
  ): Promise<{ approveUrl: string | null }>;
  suspendSubscription(id: string, reason: string): Promise<void>;
  activateSubscription(id: string, reason: string): Promise<void>;
  cancelSubscription(id: string, reason: string): Promise<void>;
  createOrder(
    input: {
      amount: number;
      currency: string;
      customId: string;
      description: string;
      returnUrl: string;
      cancelUrl: string;
    },
    idempotencyKey: string,
  ): Promise<ProviderOrder>;
  getOrder(id: string): Promise<ProviderOrder>;
  /** Replaces the amount (and description) of an order not yet captured (PayPal: PATCH on a CREATED or APPROVED order). */
  updateOrderAmount(id: string, input: { amount: number; currency: string; description: string }): Promise<void>;
  captureOrder(id: string, idempotencyKey: string): Promise<ProviderOrder>;
  /**
   * Charges what a subscription owes after failed payments (PayPal: capture the outstanding balance); the charge's
   * outcome shows in the subscription's payments and billing info. `status`: COMPLETED, DECLINED, or PENDING when
   * the provider only accepted the request (PayPal's 202).
   */
  captureOutstanding(
    id: string,
    input: { amount: number; currency: string; note: string },
    idempotencyKey: string,
  ): Promise<{ id: string; status: string }>;
  /** The payments charged for a subscription's cycles between two times (PayPal: its transactions). */
  listSubscriptionPayments(id: string, range: { from: Date; to: Date }): Promise<ProviderPayment[]>;
  /** Refunds a captured payment in full; the same idempotency key answers the same refund. */
  refundPayment(
    paymentId: string,
    input: { note: string; invoiceId?: string },
    idempotencyKey: string,
  ): Promise<{ id: string; status: string }>;
  /**
   * A test clock at the provider, where it has one (offerkit's PayPal stand-in; PayPal's own sandbox has none, and
   * this does nothing there): `align` sets these subscriptions' clock to `now` without billing (one made after the
   * app's clock moved), `advance` moves it forward and bills every cycle due by then, sending the notifications
   * before it answers. Answers how many payment attempts each subscription had (none where there is no test clock).
   */
  setTestClock(
    subscriptionIds: string[],
    now: Date,
    mode: 'align' | 'advance',
  ): Promise<{ id: string; billed: number }[]>;
  registerWebhook(url: string, eventTypes: string[]): Promise<{ id: string }>;
  listWebhooks(): Promise<{ id: string; url: string }[]>;
  /** Asks the provider whether a notification is genuine. */
  verifyNotification(input: {
    headers: Record<string, string | undefined>;
    body: unknown;
    webhookId: string;
  }): Promise<boolean>;
}

/** An error answered by the provider (or no answer at all). Routes turn it into 502 `<Provider>: <message>`. */
export class ProviderError extends Error {
  constructor(
    readonly provider: string,
    message: string,
    readonly status: number | null,
    readonly code: string | null = null,
  ) {
    super(message);
    this.name = 'ProviderError';
  }
}
