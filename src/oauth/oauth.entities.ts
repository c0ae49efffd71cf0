import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

export const OAuthClient = defineEntity({
  name: 'OAuthClient',
  tableName: 'oauth_clients',
  properties: {
    id: p.string().primary(),
    clientName: p.text().nullable(),
    redirectUris: p.json<string[]>(),
    tokenEndpointAuthMethod: p.string().default('none'),
    clientSecretHash: p.string().nullable(),
    clientUri: p.text().nullable(),
    logoUri: p.text().nullable(),
    /** First completed sign-in (approval); clients that never get one are purged. */
    signedInAt: p.datetime().nullable(),
    /** A metadata document client: until when its document is used without fetching it again. */
    metadataFreshUntil: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type IOAuthClient = InferEntity<typeof OAuthClient>;

export const OAuthRequest = defineEntity({
  name: 'OAuthRequest',
  tableName: 'oauth_requests',
  properties: {
    id: p.string().primary(),
    clientId: p.string(),
    redirectUri: p.text(),
    codeChallenge: p.string(),
    state: p.text().nullable(),
    scope: p.string().nullable(),
    resource: p.text().nullable(),
    appId: p.string().nullable(),
    expiresAt: p.datetime(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type IOAuthRequest = InferEntity<typeof OAuthRequest>;

export const OAuthCode = defineEntity({
  name: 'OAuthCode',
  tableName: 'oauth_codes',
  properties: {
    hash: p.string().primary(),
    connectionId: p.string(),
    clientId: p.string(),
    redirectUri: p.text(),
    codeChallenge: p.string(),
    resource: p.text().nullable(),
    expiresAt: p.datetime(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});

export const OAuthToken = defineEntity({
  name: 'OAuthToken',
  tableName: 'oauth_tokens',
  properties: {
    hash: p.string().primary(),
    kind: p.string().$type<'access' | 'refresh'>(),
    pairId: p.string(),
    /** The grant: every token issued from one authorization code, through its refreshes. */
    familyId: p.string(),
    /** The MCP server URL (RFC 8707 resource) the token is for. */
    audience: p.text().nullable(),
    /** When a refresh token was used (kept until it expires, so a reuse is recognised). */
    rotatedAt: p.datetime().nullable(),
    connectionId: p.string(),
    expiresAt: p.datetime(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
