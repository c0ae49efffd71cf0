import { css, html, nothing, type PropertyValues } from 'lit';
import { CANCEL_APPROVAL, OfferkitElement } from './base.js';
import type { CancelSession, SessionOffer } from './client.js';
import { forgetReturn, isReturnOf, keepTrip, keptTrip, type Trip } from './returns.js';

const APPROVAL = CANCEL_APPROVAL;
/** A save offer sent to the provider for approval: the session and who it is for, kept across the trip. */
interface Approval extends Trip {
  id: string;
  token: string;
}

/**
 * `<offerkit-cancel-flow account-token="act_..." flow="default">`: drives a cancel session through its
 * questions, text, save offer and confirm step, drawing each step and the progress from the session view.
 */
export class OfferkitCancelFlow extends OfferkitElement {
  static override properties = {
    ...OfferkitElement.properties,
    flow: {},
    returnUrl: { attribute: 'return-url' },
    session: { state: true },
    busy: { state: true },
    error: { state: true },
    choice: { state: true },
    text: { state: true },
    approved: { state: true },
  };
  declare flow: string;
  declare returnUrl: string;
  declare session: CancelSession | null;
  declare busy: boolean;
  declare error: string;
  declare choice: string;
  declare text: string;
  /** Back from the provider after approving a discount or downgrade. */
  declare approved: boolean;
  private startedFor = '';
  /** Answers chosen in this session, so Back shows them chosen again. */
  private chosen: Record<string, string> = {};
  /** The trip of the save offer accepted last, whose approval the provider may ask for. */
  private trip: Trip | null = null;

  constructor() {
    super();
    this.flow = '';
    this.returnUrl = '';
    this.session = null;
    this.busy = false;
    this.error = '';
    this.choice = '';
    this.text = '';
    this.approved = false;
  }

  override updated(changed: PropertyValues<this>) {
    const key = `${this.who()}|${this.flow}`;
    const connection = changed.has('accountToken') || changed.has('flow') || changed.has('client');
    if (connection && this.canToken && key !== this.startedFor) {
      this.startedFor = key;
      // The account the token is for: an outcome (paused, discounted, cancelled) is shown by every component of it.
      this.bindAccount(this.tokenAccount || (this.client as { accountId?: string } | null)?.accountId || '');
      void this.start();
    }
    if (changed.has('session')) {
      const prev = changed.get('session') as CancelSession | null | undefined;
      if (prev && this.session && (prev.step.id !== this.session.step.id || prev.status !== this.session.status))
        this.renderRoot.querySelector<HTMLElement>('h2')?.focus();
    }
  }

  /**
   * Starts a new session (called on its own when `account-token` is set), or, when the customer is back from
   * approving a saved offer at the provider, shows that session again.
   */
  async start() {
    const pending = keptTrip<Approval>(APPROVAL);
    if (isReturnOf(pending) && pending.token === this.who()) {
      sessionStorage.removeItem(APPROVAL);
      forgetReturn(pending);
      this.approved = true;
      await this.run(() => this.tokenClient().cancelSessions.get(pending.id));
      return;
    }
    await this.run(() => this.tokenClient().cancelSessions.start(this.flow ? { flow: this.flow } : {}));
  }

  private async run(fn: () => Promise<CancelSession>) {
    this.busy = true;
    this.error = '';
    try {
      const s = await fn();
      this.session = s;
      this.choice = s.answers?.[s.step.id]?.answer ?? this.chosen[s.step.id] ?? '';
      this.text = '';
      this.emit('step', s);
      // A discount or downgrade waits in `pending` until the provider confirms the approval.
      const accepted = s.status === 'saved' || s.status === 'pending';
      // An outcome changes the account (paused, a lower price, the free plan): every component showing it reads it
      // again, before the page hears of the outcome.
      if (accepted || s.status === 'cancelled') await this.accountStore?.refresh().catch(() => undefined);
      if (accepted && this.approved) this.emit('approved', s);
      else if (accepted) this.onSaved(s);
      else if (s.status === 'cancelled') this.emit('cancelled', s);
      else if (s.status === 'abandoned') this.emit('closed', s);
    } catch (e) {
      this.error = this.fail(e, 'token');
    } finally {
      this.busy = false;
    }
  }

  private onSaved(s: CancelSession) {
    // Discounts and downgrades need the customer's approval at the provider: go there unless the page handles it.
    if (this.emit('saved', s, true) && s.approve_url) {
      // The trip of the accept that asked for this approval: back on the page, its return is this element's.
      const approval: Approval | null = this.trip && { ...this.trip, id: s.id, token: this.who() };
      if (approval) keepTrip(APPROVAL, approval);
      globalThis.location.assign(s.approve_url);
    }
  }

  /** Who the session is for: the token, or the app and account of a `client` set instead. */
  private who(): string {
    if (this.accountToken) return this.accountToken;
    const c = this.client as { appId?: string; accountId?: string } | null;
    return c ? `${c.appId}/${c.accountId}` : '';
  }

  private get sid() {
    return this.session!.id;
  }

  private submitAnswer(ev: Event) {
    ev.preventDefault();
    const s = this.session!;
    if (s.step.type === 'question' && !this.choice && !this.text.trim()) {
      this.error = s.step.allow_text ? 'Choose an answer or tell us in your own words.' : 'Choose an answer.';
      return;
    }
    const body: { step: string; answer?: string; text?: string } = { step: s.step.id };
    if (this.choice) body.answer = this.chosen[s.step.id] = this.choice;
    if (this.text.trim()) body.text = this.text.trim();
    void this.run(() => this.tokenClient().cancelSessions.answer(this.sid, body));
  }

  private accept() {
    // The return address is marked as this approval's trip, so only its return is taken on the way back.
    const { url, ...trip } = this.newTrip(this.returnUrl);
    this.trip = trip;
    void this.run(() => this.tokenClient().cancelSessions.accept(this.sid, { return_url: url, cancel_url: url }));
  }

  override render() {
    const s = this.session;
    if (!this.canToken)
      return html`<div class="card" part="card">
        <p class="muted">Set <code>account-token</code> to start.</p>
      </div>`;
    if (!s)
      return html`<div class="card" part="card" aria-busy=${this.error ? 'false' : 'true'}>
        <p class="muted" role="status" part="loading">${this.error ? '' : 'Loading…'}</p>
        ${this.renderError()}
      </div>`;
    return html`<section class="card" part="card" aria-labelledby="title" aria-busy=${this.busy ? 'true' : 'false'}>
      ${s.status === 'open' ? this.renderOpen(s) : this.renderEnded(s)} ${this.renderError()}
    </section>`;
  }

  private renderError() {
    return html`<p class="error" role="alert" part="error">${this.error || nothing}</p>`;
  }

  private renderProgress(s: CancelSession) {
    const { index, total } = s.progress;
    return html`<div class="progress" part="progress">
      <span class="muted" id="progress-label">Step ${index} of ${total}</span>
      <div
        class="track"
        role="progressbar"
        aria-labelledby="progress-label"
        aria-valuemin="1"
        aria-valuemax=${total}
        aria-valuenow=${index}
      >
        <div class="fill" style="width:${Math.round((index / Math.max(total, 1)) * 100)}%"></div>
      </div>
    </div>`;
  }

  private backButton(s: CancelSession) {
    return s.can_go_back
      ? html`<button
          type="button"
          class="link"
          ?disabled=${this.busy}
          @click=${() => this.run(() => this.tokenClient().cancelSessions.back(this.sid))}
        >
          Back
        </button>`
      : nothing;
  }

  private renderOpen(s: CancelSession) {
    const step = s.step;
    const body = step.body ? html`<p class="muted">${step.body}</p>` : nothing;
    let content;
    if (step.type === 'question') {
      content = html`<form @submit=${this.submitAnswer}>
        <fieldset>
          <legend class="visually-hidden">${step.title}</legend>
          <div class="answers" role="radiogroup" aria-labelledby="title">
            ${step.answers.map(
              (a) =>
                html`<label class="answer">
                  <input
                    type="radio"
                    name="answer"
                    .value=${a.id}
                    .checked=${this.choice === a.id}
                    @change=${() => (this.choice = a.id)}
                  />
                  <span>${a.label}</span>
                </label>`,
            )}
          </div>
        </fieldset>
        ${
          step.allow_text
            ? html`<label class="text-label" for="text">Anything else? (optional)</label>
                <textarea
                  id="text"
                  rows="3"
                  .value=${this.text}
                  @input=${(e: Event) => (this.text = (e.target as HTMLTextAreaElement).value)}
                ></textarea>`
            : nothing
        }
        <div class="actions">
          <button type="submit" class="primary" ?disabled=${this.busy}>Continue</button>
          ${this.backButton(s)}
        </div>
      </form>`;
    } else if (step.type === 'text') {
      content = html`<div class="actions">
        <button
          type="button"
          class="primary"
          ?disabled=${this.busy}
          @click=${() => this.run(() => this.tokenClient().cancelSessions.answer(this.sid, { step: step.id }))}
        >
          Continue
        </button>
        ${this.backButton(s)}
      </div>`;
    } else if (step.type === 'offer' && s.offer) {
      content = this.renderOffer(s, s.offer);
    } else {
      const sub = s.account.subscription;
      content = html`${
          sub
            ? html`<p>
                You are on <strong>${s.account.plan_name}</strong> at ${this.money(sub.price, sub.currency)} per
                ${sub.interval}${sub.renews_at ? html`, renewing on ${this.day(sub.renews_at)}` : nothing}.
              </p>`
            : html`<p>You are on <strong>${s.account.plan_name}</strong>.</p>`
        }
        <div class="actions">
          <button
            type="button"
            class="danger"
            ?disabled=${this.busy}
            @click=${() => this.run(() => this.tokenClient().cancelSessions.cancel(this.sid))}
          >
            Cancel subscription
          </button>
          <button
            type="button"
            ?disabled=${this.busy}
            @click=${() => this.run(() => this.tokenClient().cancelSessions.close(this.sid))}
          >
            Keep my subscription
          </button>
          ${this.backButton(s)}
        </div>`;
    }
    return html`${this.renderProgress(s)}
      <h2 id="title" tabindex="-1" part="title">${step.title}</h2>
      ${body} ${content}`;
  }

  private renderOffer(s: CancelSession, o: SessionOffer) {
    const d = o.details as Record<string, unknown>;
    let terms: unknown = nothing;
    if (o.kind === 'discount' && typeof d.price === 'number')
      terms = html`<p class="terms">
        <strong>${this.money(d.price, String(d.currency))}</strong> per ${d.interval} for
        ${this.number(Number(d.cycles))} ${d.cycles === 1 ? 'renewal' : 'renewals'}
        <s class="muted">${this.money(Number(d.regular_price), String(d.currency))}</s>
      </p>`;
    else if (o.kind === 'downgrade' && typeof d.price === 'number')
      terms = html`<p class="terms">
        ${(d.plan as { name?: string })?.name ?? 'A smaller plan'} at
        <strong>${this.money(d.price, String(d.currency ?? s.account.subscription?.currency ?? 'USD'))}</strong>
      </p>`;
    return html`<div class="offer" part="offer" role="group" aria-labelledby="offer-headline">
        <h3 id="offer-headline">${o.headline}</h3>
        <p>${o.body}</p>
        ${terms}
      </div>
      <div class="actions">
        <button type="button" class="primary" ?disabled=${this.busy} @click=${this.accept}>${o.cta}</button>
        <button
          type="button"
          ?disabled=${this.busy}
          @click=${() => this.run(() => this.tokenClient().cancelSessions.decline(this.sid))}
        >
          ${s.step.decline_label || 'No thanks'}
        </button>
        ${this.backButton(s)}
      </div>`;
  }

  private renderEnded(s: CancelSession) {
    const r = (s.result ?? {}) as Record<string, unknown>;
    let title: string;
    let text: string;
    if (s.status === 'cancelled') {
      title = 'Your subscription is cancelled';
      text = 'We are sorry to see you go. You can come back any time.';
    } else if (s.status === 'abandoned') {
      title = 'Glad you are staying';
      text = 'Nothing changed: your subscription continues as before.';
    } else if (s.approve_url && this.approved) {
      title = 'You are all set';
      text = 'Thanks for approving. Your new price applies as soon as the payment provider confirms it.';
    } else if (s.approve_url) {
      title = 'Approve the new price';
      text = 'One more step: approve the change with your payment provider.';
    } else if (r.outcome === 'pause') {
      title = 'Your subscription is paused';
      text = r.resume_at
        ? `Billing resumes on ${this.day(String(r.resume_at))}.`
        : `Billing is paused for ${this.number(Number(r.months))} ${r.months === 1 ? 'month' : 'months'}.`;
    } else {
      title = 'You are all set';
      text = s.offer ? `${s.offer.headline}: applied.` : 'Your offer is applied.';
    }
    return html`<h2 id="title" tabindex="-1" part="title">${title}</h2>
      <p role="status">${text}</p>
      ${
        (s.status === 'saved' || s.status === 'pending') && s.approve_url && !this.approved
          ? html`<div class="actions"><a class="button primary" href=${s.approve_url}>Approve at the provider</a></div>`
          : nothing
      }`;
  }

  static override styles = [
    OfferkitElement.baseStyles,
    css`
      :host {
        max-width: 36rem;
      }
      .progress {
        margin-bottom: 1rem;
        font-size: 0.875rem;
      }
      .track {
        height: 6px;
        border-radius: 3px;
        background: var(--_surface);
        overflow: hidden;
        margin-top: 0.35rem;
      }
      .fill {
        height: 100%;
        background: var(--_accent);
        transition: width 0.2s;
      }
      fieldset {
        border: 0;
        padding: 0;
        margin: 0;
      }
      .answers {
        display: grid;
        gap: 0.5rem;
      }
      .answer {
        display: flex;
        gap: 0.6rem;
        align-items: center;
        border: 1px solid var(--_border);
        border-radius: calc(var(--_radius) * 0.7);
        padding: 0.7rem 0.8rem;
        cursor: pointer;
        min-height: 44px;
      }
      .answer:has(input:checked) {
        border-color: var(--_accent);
        background: color-mix(in srgb, var(--_accent) 7%, var(--_bg));
      }
      .answer input {
        accent-color: var(--_accent);
        width: 1.1rem;
        height: 1.1rem;
        margin: 0;
      }
      .text-label {
        display: block;
        margin: 0.9rem 0 0.35rem;
        font-weight: 600;
      }
      textarea {
        width: 100%;
        font: inherit;
        border: 1px solid var(--_border);
        border-radius: calc(var(--_radius) * 0.7);
        padding: 0.5rem;
      }
      .offer {
        background: var(--_surface);
        border-radius: var(--_radius);
        padding: 1rem;
        border-left: 4px solid var(--_accent);
      }
      .terms {
        margin: 0;
      }
      .terms s {
        margin-left: 0.35rem;
      }
      h2:focus {
        outline: none;
      }
    `,
  ];
}

if (!customElements.get('offerkit-cancel-flow')) customElements.define('offerkit-cancel-flow', OfferkitCancelFlow);

declare global {
  interface HTMLElementTagNameMap {
    'offerkit-cancel-flow': OfferkitCancelFlow;
  }
}
