// The customers of `npm run chaos -- billing` (scripts/chaos-billing.ts): each account is one customer doing one thing
// at a time, as a person at a billing page would. It reads its subscription, picks an intent that fits it (now and
// then one that conflicts, to be refused), sends it with an `X-Request-Id` of its own, approves at the PayPal stand-in
// what asks for approval, and comes back through the return page. An answer that never came (the API process was
// killed) or that says the outcome is unknown is followed by a read of the subscription, never by a blind repeat.
import { randomUUID } from 'node:crypto';
import type { PayPalStandIn } from '../src/dev/paypal-standin.js';

export type IntentKind =
  | 'change_now'
  | 'change_renewal'
  | 'change_replace'
  | 'withdraw'
  | 'pause'
  | 'resume'
  | 'cancel_now'
  | 'cancel_period_end'
  | 'save_discount'
  | 'save_downgrade'
  | 'save_pause'
  | 'save_incentive'
  | 'retry_payment';

/** One intent sent, with what it answered. */
export interface Asked {
  app: string;
  account: string;
  kind: IntentKind;
  requestId: string;
  /** HTTP status; 0: no answer (the connection was cut or the caller gave up after 100 s). */
  status: number;
  reason: string | null;
  /** A 503 that says the outcome is unknown (accepted, then the answer could not be waited for). */
  unknown: boolean;
  /** A 503 that says nothing was changed (Temporal did not take it within 5 s). */
  nothing: boolean;
  startedAt: number;
  ms: number;
}

export interface Reply {
  status: number;
  body: Record<string, unknown> | null;
  text: string;
  ms: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
type Json = Record<string, unknown>;

export interface Shop {
  base: () => string;
  appId: string;
  key: string;
  paypal: PayPalStandIn;
  /** Plans from the cheapest to the dearest (paid ones): a change picks a neighbour. */
  ladder: { id: string; price: number }[];
}

/** One HTTP call; status 0 when it got no answer. */
export async function call(
  shop: Pick<Shop, 'base'>,
  method: string,
  path: string,
  token: string,
  body?: unknown,
  requestId?: string,
  timeoutMs = 100_000,
): Promise<Reply> {
  const t0 = Date.now();
  try {
    const res = await fetch(shop.base() + path, {
      method,
      headers: {
        Authorization: `Bearer ${token}`,
        ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
        ...(requestId ? { 'X-Request-Id': requestId } : {}),
      },
      body: body !== undefined ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(timeoutMs),
      redirect: 'manual',
    });
    const text = await res.text();
    let parsed: Json | null = null;
    try {
      parsed = text ? (JSON.parse(text) as Json) : null;
    } catch {
      /* a page */
    }
    return { status: res.status, body: parsed, text, ms: Date.now() - t0 };
  } catch {
    return { status: 0, body: null, text: '', ms: Date.now() - t0 };
  }
}

/** Calls until something other than a 5xx or no answer comes back (a read, or a step that is safe to repeat). */
export async function persist(shop: Shop, method: string, path: string, token: string, body?: unknown, ms = 300_000) {
  const end = Date.now() + ms;
  for (;;) {
    const r = await call(shop, method, path, token, body, undefined, 30_000);
    if (r.status !== 0 && r.status < 500) return r;
    if (Date.now() > end) return r;
    await sleep(500);
  }
}

export class Customers {
  readonly asked: Asked[] = [];
  /** Intents in flight now, by request id (the fault driver records which kinds a kill hit). */
  readonly inFlight = new Map<string, IntentKind>();
  readonly counts = { checkouts: 0, approvals: 0, refusals: 0, sessions: 0, returnsLost: 0 };
  private stopAt = Infinity;

  constructor(
    private readonly shop: Shop,
    private readonly rand: () => number,
  ) {}

  stop() {
    this.stopAt = 0;
  }

  /** Buys the app's `launch` offer for the account (checkout, approval at the stand-in, completion). */
  async subscribe(account: string): Promise<void> {
    const { shop } = this;
    const A = `/apps/${shop.appId}`;
    // The shop's backend opens it with the secret key (the publishable key is held to 30 checkouts an hour per address).
    const chk = await persist(shop, 'POST', `${A}/offers/launch/checkout`, shop.key, {
      plan: shop.ladder[1].id,
      interval: 'month',
      account,
    });
    if (chk.status !== 201) throw new Error(`checkout for ${account}: ${chk.status} ${chk.text}`);
    await shop.paypal.approve(String(chk.body!.approve_url));
    for (let i = 0; i < 600; i++) {
      const done = await persist(shop, 'POST', `${A}/checkouts/${String(chk.body!.id)}/complete`, shop.key);
      if (done.body?.status === 'completed') {
        this.counts.checkouts++;
        return;
      }
      await sleep(500);
    }
    throw new Error(`checkout for ${account} never completed`);
  }

  /** The account's subscription as its page would show it (null when none). */
  private async subscription(account: string): Promise<Json | null> {
    const r = await persist(
      this.shop,
      'GET',
      `/apps/${this.shop.appId}/namespaces/${account}/subscription`,
      this.shop.key,
    );
    return r.status === 200 ? r.body : null;
  }

  /** Sends one intent and records its answer. */
  private async intent(account: string, kind: IntentKind, path: string, body: unknown = {}): Promise<Reply> {
    const requestId = randomUUID();
    this.inFlight.set(requestId, kind);
    const r = await call(this.shop, 'POST', path, this.shop.key, body, requestId);
    this.inFlight.delete(requestId);
    const reason = typeof r.body?.reason === 'string' ? r.body.reason : null;
    this.asked.push({
      app: this.shop.appId,
      account,
      kind,
      requestId,
      status: r.status,
      reason,
      unknown: r.status === 503 && r.body?.outcome === 'unknown',
      nothing: r.status === 503 && /nothing was changed/.test(String(r.body?.error ?? '')),
      startedAt: Date.now() - r.ms,
      ms: r.ms,
    });
    return r;
  }

  /** The buyer at PayPal: approves (or, now and then, refuses) and comes back through the return page. */
  private async approve(url: string | null | undefined) {
    if (!url) return;
    const refuse = this.rand() < 0.1;
    try {
      let next = await this.shop.paypal.approve(url, refuse ? 'cancel' : 'approve');
      // A prorated upgrade's order goes on to the revision's approval page.
      if (!refuse && next.includes('/checkoutnow')) next = await this.shop.paypal.approve(next);
      this.counts[refuse ? 'refusals' : 'approvals']++;
      if (next.startsWith(this.shop.base())) {
        const back = await persist(
          this.shop,
          'GET',
          next.slice(this.shop.base().length),
          this.shop.key,
          undefined,
          20_000,
        );
        if (back.status === 0 || back.status >= 500) this.counts.returnsLost++;
      }
    } catch {
      // The link was replaced or expired meanwhile (a retried intent made a new one): nothing to approve.
    }
  }

  /** A cancel session that ends in accepting the offer the answer picks (or closing it when none is offered). */
  private async save(account: string, kind: 'save_discount' | 'save_downgrade' | 'save_pause' | 'save_incentive') {
    const { shop } = this;
    const A = `/apps/${shop.appId}`;
    const answer = {
      save_discount: 'price',
      save_downgrade: 'features',
      save_pause: 'busy',
      save_incentive: 'partner',
    }[kind];
    const started = await call(shop, 'POST', `${A}/cancel-sessions`, shop.key, { account, flow: 'default' });
    if (started.status !== 201) return;
    this.counts.sessions++;
    const id = String(started.body!.id);
    const answered = await call(shop, 'POST', `${A}/cancel-sessions/${id}/answer`, shop.key, {
      step: 'reason',
      answer,
    });
    const step = (answered.body?.step as Json | undefined)?.type;
    if (answered.status !== 200 || step !== 'offer') {
      await call(shop, 'POST', `${A}/cancel-sessions/${id}/close`, shop.key, {});
      return;
    }
    const r = await this.intent(account, kind, `${A}/cancel-sessions/${id}/accept`);
    if (r.status === 200) await this.approve(r.body?.approve_url as string | null);
    else await call(shop, 'POST', `${A}/cancel-sessions/${id}/close`, shop.key, {});
  }

  /** One step of the customer: an intent that fits the subscription (or, now and then, one that conflicts). */
  private async step(account: string) {
    const { shop, rand } = this;
    const sub = await this.subscription(account);
    const S = `/apps/${shop.appId}/namespaces/${account}/subscription`;
    if (!sub || sub.status === 'cancelled') return this.subscribe(account);
    const pc = sub.pending_change as Json | null;
    const rung = shop.ladder.findIndex((p) => p.id === sub.plan);
    const up = shop.ladder[rung + 1]?.id ?? null;
    const down = rung > 0 ? shop.ladder[rung - 1].id : null;
    const pick = <T extends string>(weights: [T, number][]): T => {
      const total = weights.reduce((n, [, w]) => n + w, 0);
      let x = rand() * total;
      for (const [k, w] of weights) if ((x -= w) < 0) return k;
      return weights[0][0];
    };
    let kind: IntentKind | 'none';
    if (sub.status === 'past_due')
      kind = pick([
        ['retry_payment', 9],
        ['pause', 1],
      ]);
    else if (sub.status === 'paused')
      kind = pick([
        ['resume', 8],
        ['cancel_now', 1],
        ['pause', 1],
      ]);
    else if (sub.cancel_at)
      kind = pick([
        ['resume', 8],
        ['change_now', 1],
        ['save_pause', 1],
      ]);
    else if (pc?.status === 'awaiting_approval')
      kind = pick([
        ['withdraw', 7],
        ['pause', 2],
        ['cancel_period_end', 1],
      ]);
    else if (pc?.status === 'scheduled')
      kind = pick([
        ['withdraw', 3],
        ['pause', 2],
        ['cancel_period_end', 1],
        ['change_replace', 2],
        ['save_discount', 1],
        ['save_pause', 1],
      ]);
    else
      kind = pick([
        [up ? 'change_now' : 'change_renewal', 18],
        [down ? 'change_renewal' : 'change_now', 14],
        ['pause', 12],
        ['cancel_period_end', 8],
        ['cancel_now', 4],
        ['save_discount', 8],
        ['save_downgrade', 7],
        ['save_pause', 7],
        ['save_incentive', 6],
        ['resume', 3],
        ['withdraw', 3],
      ]);
    switch (kind) {
      case 'change_now':
      case 'change_renewal':
      case 'change_replace': {
        const target =
          kind === 'change_replace'
            ? (shop.ladder.find((p) => p.id !== sub.plan && p.id !== pc?.plan)?.id ?? up ?? down)
            : kind === 'change_now'
              ? (up ?? down)
              : (down ?? up);
        const r = await this.intent(account, kind, `${S}/change`, {
          plan: target,
          ...(kind === 'change_replace' ? { replace: true } : {}),
        });
        if (r.status === 200) await this.approve(r.body?.approve_url as string | null);
        return;
      }
      case 'withdraw': {
        const r = await this.intent(account, kind, `${S}/change/withdraw`);
        if (r.status === 200) await this.approve(r.body?.approve_url as string | null);
        return;
      }
      case 'pause':
        return void (await this.intent(account, kind, `${S}/pause`, { months: 1 }));
      case 'resume':
        return void (await this.intent(account, kind, `${S}/resume`));
      case 'cancel_now':
        return void (await this.intent(account, kind, `${S}/cancel`, { at: 'now' }));
      case 'cancel_period_end':
        return void (await this.intent(account, kind, `${S}/cancel`, { at: 'period_end' }));
      case 'retry_payment':
        return void (await this.intent(account, kind, `${S}/retry-payment`));
      case 'save_discount':
      case 'save_downgrade':
      case 'save_pause':
      case 'save_incentive':
        return this.save(account, kind);
    }
  }

  /** Runs the account's customer until `stop()` or `untilMs` (real time). */
  async run(account: string, untilMs: number) {
    while (Date.now() < Math.min(untilMs, this.stopAt)) {
      try {
        await this.step(account);
      } catch (err) {
        process.stderr.write(`customer ${account}: ${String(err)}\n`);
      }
      await sleep(100 + this.rand() * 400);
    }
  }
}
