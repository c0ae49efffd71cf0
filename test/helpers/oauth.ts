import { createHash, randomBytes } from 'node:crypto';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { expect } from 'chai';
import { post } from './http.js';
import { testEnv } from './servers.js';

export const REDIRECT = 'http://127.0.0.1:33418/callback';

/**
 * An OAuth client provider as an MCP client implements it, kept in memory. "Opening the browser" is
 * `approve`: it follows the authorization URL and decides on the consent step (through the admin
 * routes, or a real browser), and returns the code the client's redirect URI received.
 */
export class TestOAuthProvider implements OAuthClientProvider {
  info?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier?: string;
  code?: string;
  authorizationUrl?: URL;
  constructor(
    readonly approve: (authorizationUrl: URL) => Promise<string>,
    readonly scope?: string,
  ) {}
  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'SDK test client',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      ...(this.scope ? { scope: this.scope } : {}),
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  async redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
    this.code = await this.approve(url);
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    if (!this.verifier) throw new Error('no code verifier saved');
    return this.verifier;
  }
}

/** Follows /oauth/authorize to the consent redirect and returns the saved request's id. */
export async function openAuthorization(url: URL): Promise<string> {
  const res = await fetch(url, { redirect: 'manual' });
  expect(res.status, await res.clone().text()).to.equal(302);
  const location = new URL(res.headers.get('location')!);
  // The console's consent page by default; the service's own (admin key) when APP_URL is the API's origin.
  expect(location.pathname).to.match(/^(\/console)?\/oauth\/consent$/);
  return location.searchParams.get('request')!;
}

/** Approves through the admin route as `user` with `level` and returns the code from the redirect URL. */
export const approveWith =
  (level: 'read' | 'write' | 'full', user = { id: 'user_1', name: 'Ada', email: 'ada@example.com' }, appId?: string) =>
  async (url: URL): Promise<string> => {
    const requestId = await openAuthorization(url);
    const res = await post(`/oauth/requests/${requestId}/approve`, testEnv().adminKey, {
      user,
      access_level: level,
      ...(appId ? { app_id: appId } : {}),
    });
    expect(res.status, res.text).to.equal(200);
    const redirect = new URL(res.body.redirect_url);
    expect(`${redirect.origin}${redirect.pathname}`).to.equal(REDIRECT);
    return redirect.searchParams.get('code')!;
  };

/** A form POST (token and revoke endpoints take `application/x-www-form-urlencoded`). */
export async function postForm(path: string, fields: Record<string, string>, headers: Record<string, string> = {}) {
  const res = await fetch(testEnv().baseUrl + path, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(fields),
  });
  const text = await res.text();
  const json = (res.headers.get('content-type') ?? '').includes('json');
  return { status: res.status, body: text && json ? JSON.parse(text) : text, headers: res.headers };
}

/** A PKCE pair (S256). */
export function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/**
 * An OAuth sign-in done end to end over HTTP (register, authorize with PKCE, approve with the admin key as `user`,
 * exchange the code): the tokens and the client. `base` is where the code is exchanged: the token's audience is
 * that origin's MCP server URL.
 */
export async function signInOAuth(
  appId: string,
  opts: { level?: 'read' | 'write' | 'full'; user?: { id: string; name: string; email: string }; base?: string } = {},
): Promise<{ accessToken: string; refreshToken: string; clientId: string }> {
  const base = opts.base ?? testEnv().baseUrl;
  const registered = await fetch(`${base}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ redirect_uris: [REDIRECT], client_name: 'Signed-in client' }),
  });
  const client = (await registered.json()) as { client_id: string };
  expect(registered.status, JSON.stringify(client)).to.equal(201);
  const { verifier, challenge } = pkce();
  const url = new URL(
    `${base}/oauth/authorize?${new URLSearchParams({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: REDIRECT,
      code_challenge: challenge,
      code_challenge_method: 'S256',
    })}`,
  );
  const code = await approveWith(
    opts.level ?? 'write',
    opts.user ?? { id: 'user_1', name: 'Ada', email: 'ada@example.com' },
    appId,
  )(url);
  const res = await fetch(`${base}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      client_id: client.client_id,
    }),
  });
  const tokens = (await res.json()) as { access_token: string; refresh_token: string };
  expect(res.status, JSON.stringify(tokens)).to.equal(200);
  return { accessToken: tokens.access_token, refreshToken: tokens.refresh_token, clientId: client.client_id };
}
