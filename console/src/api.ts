// The console's one door to the server. The public API goes through the generated SDK (@offerkit/sdk), as any
// product would use it, pointed at /console/api: the console's server side checks the person's session cookie,
// checks the app is in one of their workspaces, and continues the call with the app's secret key. The browser
// holds no key; the SDK's credential is a placeholder the server replaces. The console's own JSON (who am I,
// setup, invitations, the consent page) and the app-scoped admin-only routes (MCP settings, connections, calls),
// which the SDK leaves out, go through the same client's `request`. The open event catalog (`/event-types`) is
// read from the service directly.
import { APIError, SecretClient } from '@offerkit/sdk';

export { APIError as ApiError };

const CONSOLE_API = '/console/api';

/** The session cookie rides along; retries are the SDK's (connection errors, 5xx, 429). */
const sameOriginFetch: typeof fetch = (input, init) => fetch(input, { ...init, credentials: 'same-origin' });

/** The server replaces this with the app's secret key after checking the person's session. */
const SESSION_CREDENTIAL = 'console-session';

const clients = new Map<string, SecretClient>();

/** The public API of one app, as the signed-in person: `appApi(id).plans.list()`. */
export function appApi(appId: string): SecretClient {
  let client = clients.get(appId);
  if (!client) {
    client = new SecretClient({
      secretKey: SESSION_CREDENTIAL,
      appId,
      baseUrl: `${window.location.origin}${CONSOLE_API}`,
      fetch: sameOriginFetch,
    });
    clients.set(appId, client);
  }
  return client;
}
export type AppApi = SecretClient;

/** A client for the console's own JSON (no app): the same SDK core, so errors look the same everywhere. */
const own = new SecretClient({
  secretKey: SESSION_CREDENTIAL,
  appId: 'console',
  baseUrl: `${window.location.origin}${CONSOLE_API}`,
  fetch: sameOriginFetch,
  maxRetries: 0,
});

export const consoleApi = {
  get: <T>(p: string, query?: Record<string, unknown>) => own.request<T>('GET', p, { query }),
  post: <T>(p: string, body: unknown = {}) => own.request<T>('POST', p, { body }),
  patch: <T>(p: string, body: unknown = {}) => own.request<T>('PATCH', p, { body }),
  del: <T>(p: string) => own.request<T>('DELETE', p),
};

/** Routes of an app that the SDK leaves out (admin-only: MCP settings, connections, calls). */
export function adminApi(appId: string) {
  const base = `/apps/${encodeURIComponent(appId)}`;
  const c = appApi(appId);
  return {
    get: <T>(p: string, query?: Record<string, unknown>) => c.request<T>('GET', `${base}${p}`, { query }),
    patch: <T>(p: string, body: unknown) => c.request<T>('PATCH', `${base}${p}`, { body }),
    del: <T>(p: string) => c.request<T>('DELETE', `${base}${p}`),
  };
}

/** An event type of the catalog with a sample `data` (`GET /event-types`, an open route the SDK leaves out). */
export interface EventType {
  type: string;
  description: string;
  sample: Record<string, unknown>;
}

/** `GET /event-types`: open to anyone, so it is fetched from the service itself, without the console's proxy. */
export async function eventTypes(): Promise<EventType[]> {
  const res = await fetch(`${window.location.origin}/event-types`, { headers: { Accept: 'application/json' } });
  const body = (await res.json().catch(() => null)) as EventType[] | { error?: string } | null;
  if (!res.ok || !Array.isArray(body))
    throw new Error((body && !Array.isArray(body) && body.error) || `GET /event-types answered ${res.status}`);
  return body;
}

// ---- shapes of the public API the console reads ----------------------------------------------------
export interface Me {
  user: { id: string; name: string; email: string };
  workspaces: { id: string; name: string; role: string; demo: boolean; apps: { id: string; name: string }[] }[];
  temporal_ui_url: string | null;
  temporal_namespace?: string;
}
import type {
  AccessGetPrivateResponse,
  AccountsGetResponse,
  AddonsGetResponse,
  AppsGetResponse,
  EntitlementsGetResponse,
  IncentivesGetResponse,
  PlansGetResponse,
} from '@offerkit/sdk';

// The shapes come from the SDK, generated from the OpenAPI document: the console reads what the API documents.
export type App = AppsGetResponse;
export type Entitlement = EntitlementsGetResponse;
export type Plan = PlansGetResponse;
export type Addon = AddonsGetResponse;
export type Incentive = IncentivesGetResponse;
export type Account = AccountsGetResponse;
export type Access = AccessGetPrivateResponse;
export type AccessEntry = Access['entitlements'][number];
export interface Page<T> {
  data: T[];
  total: number;
  page: number;
  per_page: number;
}
