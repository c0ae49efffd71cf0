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
