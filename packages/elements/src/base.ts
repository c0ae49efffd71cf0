import { css, LitElement } from 'lit';
import {
  accountTokenClient,
  publishableClient,
  type AccountTokenClient,
  type Connection,
  type PublishableClient,
} from './client.js';

/**
 * What every component shares: the connection attributes (`base-url`, `app-id`, `publishable-key` or
 * `account-token`), the SDK clients made from them, and the theme (CSS custom properties with defaults).
 */
export class OfferkitElement extends LitElement {
  static override properties = {
    baseUrl: { attribute: 'base-url' },
    appId: { attribute: 'app-id' },
    publishableKey: { attribute: 'publishable-key' },
    accountToken: { attribute: 'account-token' },
    client: { attribute: false },
  };
  declare baseUrl: string;
  declare appId: string;
  declare publishableKey: string;
  declare accountToken: string;
  /**
   * Set this to an `@offerkit/sdk` PublishableClient or AccountTokenClient of your own (other timeouts, retries,
   * headers or fetch) instead of the ones the element makes from its attributes.
   */
  declare client: PublishableClient | AccountTokenClient | null;
  private made = new Map<string, PublishableClient | AccountTokenClient>();

  constructor() {
    super();
    this.baseUrl = '';
    this.appId = '';
    this.publishableKey = '';
    this.accountToken = '';
    this.client = null;
  }

  /** Whether a publishable-key client can be had (the attribute, or a `client` that is one). */
  protected get canPublishable(): boolean {
    return !!this.publishableKey || !!(this.client && 'offers' in this.client);
  }

  /** Whether an account-token client can be had (the attribute, or a `client` that is one). */
  protected get canToken(): boolean {
    return !!this.accountToken || !!(this.client && 'cancelSessions' in this.client);
  }

  private connection(): Connection {
    return {
      baseUrl: this.baseUrl || undefined,
      appId: this.appId || undefined,
      publishableKey: this.publishableKey || undefined,
      accountToken: this.accountToken || undefined,
    };
  }

  /** One client per kind and connection, made again only when an attribute changes. */
  private reuse<C extends PublishableClient | AccountTokenClient>(kind: string, make: () => C): C {
    const key = `${kind}|${this.baseUrl}|${this.appId}|${kind === 'P' ? this.publishableKey : this.accountToken}`;
    let c = this.made.get(key) as C | undefined;
    if (!c) {
      c = make();
      this.made.clear();
      this.made.set(key, c);
    }
    return c;
  }

  /** The publishable-key client: the `client` property when it is one (it has `offers`), else from attributes. */
  protected publishable(): PublishableClient {
    if (this.client && 'offers' in this.client) return this.client;
    return this.reuse('P', () => publishableClient(this.connection()));
  }

  /** The account-token client: the `client` property when it is one (it has `cancelSessions`), else from attributes. */
  protected tokenClient(): AccountTokenClient {
    if (this.client && 'cancelSessions' in this.client) return this.client;
    return this.reuse('T', () => accountTokenClient(this.connection()));
  }

  /** Dispatches a composed, bubbling `offerkit-<name>` event; returns false when a listener prevented it. */
  protected emit(name: string, detail: unknown, cancelable = false): boolean {
    return this.dispatchEvent(
      new CustomEvent(`offerkit-${name}`, { detail, bubbles: true, composed: true, cancelable }),
    );
  }

  /** The SDK's errors carry the service's message (`error`, or `message` for codes such as `limit_reached`). */
  protected errorText(e: unknown): string {
    return e instanceof Error ? e.message : String(e);
  }

  static baseStyles = css`
    :host {
      --_accent: var(--offerkit-accent, #4f46e5);
      --_accent-text: var(--offerkit-accent-text, #ffffff);
      --_text: var(--offerkit-text, #1f2937);
      --_muted: var(--offerkit-muted, #5b6472);
      --_bg: var(--offerkit-background, #ffffff);
      --_surface: var(--offerkit-surface, #f6f7f9);
      --_border: var(--offerkit-border, #d9dce3);
      --_danger: var(--offerkit-danger, #b42318);
      --_success: var(--offerkit-success, #067647);
      --_radius: var(--offerkit-radius, 10px);
      --_font: var(--offerkit-font, system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif);
      --_focus: var(--offerkit-focus-ring, 0 0 0 3px color-mix(in srgb, var(--_accent) 40%, transparent));
      display: block;
      box-sizing: border-box;
      font-family: var(--_font);
      color: var(--_text);
      line-height: 1.45;
    }
    *,
    *::before,
    *::after {
      box-sizing: inherit;
    }
    [hidden] {
      display: none !important;
    }
    .card {
      background: var(--_bg);
      border: 1px solid var(--_border);
      border-radius: var(--_radius);
      padding: 1.25rem;
    }
    h2,
    h3 {
      margin: 0 0 0.5rem;
      line-height: 1.25;
    }
    h2 {
      font-size: 1.25rem;
    }
    h3 {
      font-size: 1.05rem;
    }
    p {
      margin: 0 0 0.75rem;
    }
    .muted {
      color: var(--_muted);
    }
    button,
    .button {
      font: inherit;
      font-weight: 600;
      border-radius: calc(var(--_radius) * 0.7);
      padding: 0.6rem 1rem;
      min-height: 44px;
      border: 1px solid var(--_border);
      background: var(--_bg);
      color: var(--_text);
      cursor: pointer;
      text-decoration: none;
      display: inline-flex;
      align-items: center;
      justify-content: center;
    }
    button.primary,
    .button.primary {
      background: var(--_accent);
      border-color: var(--_accent);
      color: var(--_accent-text);
    }
    button.danger {
      background: var(--_danger);
      border-color: var(--_danger);
      color: #fff;
    }
    button.link {
      border-color: transparent;
      background: transparent;
      color: var(--_accent);
      padding-inline: 0.25rem;
    }
    button:disabled {
      opacity: 0.6;
      cursor: progress;
    }
    button:focus-visible,
    .button:focus-visible,
    input:focus-visible,
    textarea:focus-visible,
    [tabindex]:focus-visible {
      outline: none;
      box-shadow: var(--_focus);
    }
    .actions {
      display: flex;
      flex-wrap: wrap;
      gap: 0.5rem;
      margin-top: 1rem;
      align-items: center;
    }
    .error {
      color: var(--_danger);
      margin-top: 0.75rem;
    }
    .visually-hidden {
      position: absolute;
      width: 1px;
      height: 1px;
      overflow: hidden;
      clip: rect(0 0 0 0);
      white-space: nowrap;
    }
  `;
}

/** "$14.25" in the page's language. */
export function money(amount: number, currency: string): string {
  try {
    return new Intl.NumberFormat(undefined, { style: 'currency', currency }).format(amount);
  } catch {
    return `${amount} ${currency}`;
  }
}

/** "api_calls" → "Api calls" (public offer views carry entitlement ids, not names). */
export function humanize(id: string): string {
  const [first, ...rest] = id.split('_');
  // Short first words are most often acronyms: api_calls → API calls, sso → SSO.
  const head = first.length <= 3 ? first.toUpperCase() : first.charAt(0).toUpperCase() + first.slice(1);
  return [head, ...rest].join(' ');
}
