import { takeViolations } from '../../src/http/contract.js';
import { testEnv } from './servers.js';

export interface Res<T = any> {
  status: number;
  body: T;
  text: string;
  headers: Headers;
}

let baseOverride: string | undefined;
/** Points every helper call without `base` at another API (an isolated stack), or back (undefined). */
export function useBase(base: string | undefined): void {
  baseOverride = base;
}

/** Real HTTP against the test API. `body` is sent as JSON; `raw` is sent as given (text as UTF-8, or bytes). */
export async function call<T = any>(
  method: string,
  path: string,
  opts: {
    token?: string | null;
    body?: unknown;
    raw?: string | Uint8Array;
    headers?: Record<string, string>;
    base?: string;
  } = {},
): Promise<Res<T>> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.Authorization = `Bearer ${opts.token}`;
  let payload: string | Uint8Array<ArrayBuffer> | undefined;
  if (opts.raw !== undefined) {
    payload = typeof opts.raw === 'string' ? opts.raw : new Uint8Array(opts.raw);
    headers['Content-Type'] ??= 'application/json';
  } else if (opts.body !== undefined) {
    payload = JSON.stringify(opts.body);
    headers['Content-Type'] = 'application/json';
  }
  const res = await fetch((opts.base ?? baseOverride ?? testEnv().baseUrl) + path, {
    method,
    headers,
    body: payload,
    redirect: 'manual',
  });
  const text = await res.text();
  // The server held the answer to its route's documents (src/http/contract.ts); a mismatch fails here.
  const drift = takeViolations(res.headers.get('X-Request-Id') ?? '');
  if (drift.length) throw new Error(drift.map((v) => v.message).join('\n'));
  let body: any = text;
  if ((res.headers.get('content-type') ?? '').includes('json') && text) body = JSON.parse(text);
  return { status: res.status, body, text, headers: res.headers };
}

export const get = <T = any>(path: string, token?: string | null) => call<T>('GET', path, { token });
export const post = <T = any>(path: string, token?: string | null, body?: unknown) =>
  call<T>('POST', path, { token, body: body ?? {} });
export const patch = <T = any>(path: string, token?: string | null, body?: unknown) =>
  call<T>('PATCH', path, { token, body });
export const del = <T = any>(path: string, token?: string | null) => call<T>('DELETE', path, { token });
