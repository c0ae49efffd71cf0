import net from 'node:net';
import { Webhook } from 'standardwebhooks';
import { Agent, request } from 'undici';
import { guardedLookup, isPublicAddress, type Resolver } from './url-policy.js';

export const DELIVERY_TIMEOUT_MS = 10_000;
export const RESPONSE_BODY_LIMIT = 1024;
export const USER_AGENT = 'Offerkit-Webhooks/1.0';

export interface AttemptResult {
  ok: boolean;
  status: number | null;
  body: string | null;
  /** Why it failed: `HTTP <status>`, a timeout, a refused address, a network error. Null on success. */
  error: string | null;
  durationMs: number;
}

const agents = new Map<string, Agent>();

/** One HTTP agent per address policy; its sockets connect only to addresses the policy allows. */
function agentFor(allowPrivate: boolean, resolve: Resolver): Agent {
  const key = `${allowPrivate}`;
  let agent = agents.get(key);
  if (!agent) {
    agent = new Agent({
      connect: { lookup: guardedLookup({ allowPrivate, resolve }), timeout: DELIVERY_TIMEOUT_MS },
      keepAliveTimeout: 10_000,
    });
    agents.set(key, agent);
  }
  return agent;
}

/** Standard Webhooks headers for one attempt: `webhook-id` is the event id, the same on every retry. */
export function signedHeaders(secret: string, eventId: string, body: string, at = new Date()) {
  return {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    'webhook-id': eventId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(eventId, at, body),
  };
}

/**
 * Sends one signed POST. A 2xx within 10 seconds is a success; anything else (another status, a
 * redirect, which is not followed, a timeout, a refused address) is a failure with a reason.
 */
export async function sendSigned(opts: {
  url: string;
  secret: string;
  eventId: string;
  body: string;
  allowPrivate: boolean;
  resolve: Resolver;
}): Promise<AttemptResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const host = new URL(opts.url).hostname.replace(/^\[(.*)\]$/, '$1');
  if (!opts.allowPrivate && net.isIP(host) && !isPublicAddress(host)) {
    return { ok: false, status: null, body: null, error: `Blocked: ${host} is not a public address`, durationMs: 0 };
  }
  try {
    const res = await request(opts.url, {
      method: 'POST',
      headers: signedHeaders(opts.secret, opts.eventId, opts.body),
      body: opts.body,
      dispatcher: agentFor(opts.allowPrivate, opts.resolve),
      signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
      headersTimeout: DELIVERY_TIMEOUT_MS,
      bodyTimeout: DELIVERY_TIMEOUT_MS,
    });
    let text = '';
    try {
      for await (const chunk of res.body) {
        text += chunk.toString();
        if (text.length >= RESPONSE_BODY_LIMIT) break;
      }
    } finally {
      res.body.destroy();
    }
    const ok = res.statusCode >= 200 && res.statusCode < 300;
    return {
      ok,
      status: res.statusCode,
      body: text.slice(0, RESPONSE_BODY_LIMIT),
      error: ok ? null : `HTTP ${res.statusCode}`,
      durationMs: elapsed(),
    };
  } catch (err) {
    const e = err as Error & { code?: string; cause?: Error & { code?: string } };
    const code = e.code ?? e.cause?.code;
    let reason: string;
    if (
      e.name === 'TimeoutError' ||
      e.name === 'AbortError' ||
      code === 'UND_ERR_HEADERS_TIMEOUT' ||
      code === 'UND_ERR_BODY_TIMEOUT' ||
      code === 'UND_ERR_CONNECT_TIMEOUT'
    ) {
      reason = `Timeout: no response within ${DELIVERY_TIMEOUT_MS / 1000} seconds`;
    } else if (code === 'EBLOCKED' || e.cause?.message?.startsWith('Blocked')) {
      reason = (e.cause?.message ?? e.message).replace(/^Error: /, '');
    } else {
      reason = `${code ? `${code}: ` : ''}${e.cause?.message ?? e.message}`;
    }
    return { ok: false, status: null, body: null, error: reason, durationMs: elapsed() };
  }
}
