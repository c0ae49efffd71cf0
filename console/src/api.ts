// The console's one door to the server: the console's own JSON under /console/api, and the public API
// on the signed-in person's behalf under /console/api/apps/:appId/... (the server adds the app's key).
// Kept in one file with small types so it can be swapped for the generated SDK (packages/sdk) later.

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly body: unknown,
  ) {
    super(message);
  }
}

async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(path, {
    method,
    credentials: 'same-origin',
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  const parsed: unknown = text ? safeJson(text) : null;
  if (!res.ok) {
    const msg =
      parsed && typeof parsed === 'object' && 'error' in parsed ? String((parsed as { error: unknown }).error) : text;
    throw new ApiError(res.status, msg || `HTTP ${res.status}`, parsed);
  }
  return parsed as T;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export const consoleApi = {
  get: <T>(p: string) => call<T>('GET', `/console/api${p}`),
  post: <T>(p: string, body: unknown = {}) => call<T>('POST', `/console/api${p}`, body),
};

/** The public API of one app, as the signed-in person. */
export function appApi(appId: string) {
  const base = `/console/api/apps/${encodeURIComponent(appId)}`;
  return {
    get: <T>(p: string, q?: Record<string, string | number | undefined>) => {
      const qs = q
        ? new URLSearchParams(
            Object.entries(q)
              .filter(([, v]) => v !== undefined && v !== '')
              .map(([k, v]) => [k, String(v)]),
          ).toString()
        : '';
      return call<T>('GET', `${base}${p}${qs ? `?${qs}` : ''}`);
    },
    post: <T>(p: string, body: unknown = {}) => call<T>('POST', `${base}${p}`, body),
    patch: <T>(p: string, body: unknown) => call<T>('PATCH', `${base}${p}`, body),
    del: <T>(p: string) => call<T>('DELETE', `${base}${p}`),
  };
}
export type AppApi = ReturnType<typeof appApi>;

// ---- shapes of the public API the console reads ----------------------------------------------------
export interface Me {
  user: { id: string; name: string; email: string };
  workspaces: { id: string; name: string; role: string; demo: boolean; apps: { id: string; name: string }[] }[];
  temporal_ui_url: string | null;
}
export interface App {
  id: string;
  name: string;
  api_key: string;
  public_key: string;
  checkout_url: string | null;
  created_at: string;
}
export interface Entitlement {
  id: string;
  type: 'usage' | 'boolean';
  name: string;
  description?: string | null;
}
export interface Plan {
  id: string;
  name: string;
  description?: string | null;
  isFree?: boolean;
  entitlements: { id: string; max: number | null }[];
  addons: string[];
  meta?: Record<string, unknown>;
  privateMetaKeys?: string[];
  pricingCard?: { title?: string; monthlyPrice?: number; yearlyPrice?: number; currency?: string } | null;
}
export interface Addon {
  id: string;
  name: string;
  description?: string | null;
}
export interface Incentive {
  id: string;
  name: string;
  description?: string | null;
  entitlements?: { id: string; max: number | null }[];
  addons?: string[];
}
export interface Account {
  id: string;
  name?: string | null;
  plan: string;
  incentive: string | null;
  incentive_expires_at: string | null;
  created_at: string;
  subscription?: Record<string, unknown> | null;
}
export interface Page<T> {
  data: T[];
  total: number;
  page: number;
  per_page: number;
}
export interface AccessEntry {
  id: string;
  name: string;
  type: 'usage' | 'boolean';
  usage: number;
  max: number | null;
  left: number | null;
  can: boolean;
}
export interface Access {
  plan: { id: string; name: string };
  incentive: string | null;
  offer: string | null;
  addons: string[];
  entitlements: AccessEntry[];
}
