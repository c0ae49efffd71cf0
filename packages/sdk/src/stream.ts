import { APIConnectionError, APIError, OfferkitError } from './errors.js';

/** An event of `GET /apps/{appId}/stream` (docs/api.md, "The change stream"). */
export type ChangeEvent =
  | { type: 'ready'; id: string; data: Record<string, never> }
  | { type: 'resync'; id: string; data: { reason: string } }
  | { type: 'catalog'; id: string; data: { table: string } }
  | { type: 'account'; id: string; data: { accountId: string } }
  | {
      type: 'usage';
      id: string;
      data: { accountId: string; entitlementId: string; usage: number; held: number };
    }
  /** Reserved for credit balances (issue 42): `data` carries at least `accountId`. */
  | { type: 'credits'; id: string; data: { accountId: string } & Record<string, unknown> }
  /** The server's keep-alive comment: proof the connection is alive, no change. */
  | { type: 'keep-alive'; id: ''; data: Record<string, never> };

export interface StreamOptions {
  baseUrl: string;
  appId: string;
  /** The secret key, or an account token (its own account's events and the catalog's). */
  credential: string;
  /** Resume after this event id (`Last-Event-ID`). */
  lastEventId?: string | null;
  signal?: AbortSignal;
  fetch?: typeof fetch;
  /** Milliseconds to wait for the stream's headers (default 10,000). */
  connectTimeout?: number;
}

/**
 * One connection to the change stream, as an async iterator of its events (server-sent events parsed here: a
 * `fetch` body, so it runs in Node 18+ and browsers and sends the credential as a header). It ends when the server
 * ends it or `signal` aborts; reconnecting (with the last id) is the caller's: `client.local()` does it.
 */
export async function* streamChanges(o: StreamOptions): AsyncGenerator<ChangeEvent> {
  const f = o.fetch ?? globalThis.fetch;
  const url = `${o.baseUrl.replace(/\/+$/, '')}/apps/${encodeURIComponent(o.appId)}/stream`;
  const headers: Record<string, string> = { Authorization: `Bearer ${o.credential}`, Accept: 'text/event-stream' };
  if (o.lastEventId) headers['Last-Event-ID'] = o.lastEventId;
  const connect = new AbortController();
  const abort = () => connect.abort();
  o.signal?.addEventListener('abort', abort);
  const timer = setTimeout(abort, o.connectTimeout ?? 10_000);
  let res: Response;
  try {
    res = await f(url, { headers, signal: connect.signal });
  } catch (err) {
    o.signal?.removeEventListener('abort', abort);
    if (o.signal?.aborted) return;
    throw new APIConnectionError(`could not reach ${url}`, { cause: err });
  } finally {
    clearTimeout(timer);
  }
  try {
    if (!res.ok) {
      const text = await res.text();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // not JSON: kept as text
      }
      throw APIError.from(res.status, body, res.headers);
    }
    if (!res.body) throw new OfferkitError('the stream answered without a body');
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    let event = { id: '', type: 'message', data: '' };
    for (;;) {
      let chunk: ReadableStreamReadResult<string>;
      try {
        chunk = await reader.read();
      } catch (err) {
        if (o.signal?.aborted) return;
        throw new APIConnectionError('the change stream was cut', { cause: err });
      }
      if (chunk.done) return;
      buffer += chunk.value;
      let nl: number;
      while ((nl = buffer.search(/\r\n|\r|\n/)) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + (buffer.startsWith('\r\n', nl) ? 2 : 1));
        if (line === '') {
          if (event.data !== '' || event.type !== 'message')
            yield { id: event.id, type: event.type, data: JSON.parse(event.data || '{}') } as ChangeEvent;
          event = { id: '', type: 'message', data: '' };
        } else if (line.startsWith(':')) yield { type: 'keep-alive', id: '', data: {} };
        else {
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (field === 'id') event.id = value;
          else if (field === 'event') event.type = value;
          else if (field === 'data') event.data += (event.data ? '\n' : '') + value;
        }
      }
    }
  } finally {
    o.signal?.removeEventListener('abort', abort);
    connect.abort();
  }
}
