// The OAuth error shape and the discovery documents (RFC 8414, RFC 9728) of the MCP server's sign-in.
import { z } from 'zod';
import { AppError } from '../errors.js';
import { SCOPES } from '../mcp/settings.js';

/** An OAuth error (RFC 6749 section 5.2): `{ error, error_description }`. */
export const oauthError = (status: number, error: string, description: string, headers?: Record<string, string>) =>
  new AppError(status, error, { error_description: description }, headers);

export const mcpResourceUrl = (origin: string, appId: string) => `${origin}/apps/${encodeURIComponent(appId)}/mcp`;

export const protectedResourceSchema = z.object({
  resource: z.string(),
  authorization_servers: z.array(z.string()),
  scopes_supported: z.array(z.string()),
  bearer_methods_supported: z.array(z.string()),
  resource_name: z.string().optional(),
});

/** RFC 9728 protected resource metadata: for one app's MCP server, or (no app) for the API origin. */
export function protectedResourceMetadata(
  origin: string,
  app: { id: string; name: string } | null,
): z.input<typeof protectedResourceSchema> {
  return {
    resource: app ? mcpResourceUrl(origin, app.id) : origin,
    authorization_servers: [origin],
    scopes_supported: SCOPES,
    bearer_methods_supported: ['header'],
    ...(app ? { resource_name: `offerkit MCP server: ${app.name}` } : {}),
  };
}

export const authorizationServerSchema = z.object({
  issuer: z.string(),
  authorization_endpoint: z.string(),
  token_endpoint: z.string(),
  registration_endpoint: z.string(),
  revocation_endpoint: z.string(),
  scopes_supported: z.array(z.string()),
  response_types_supported: z.array(z.string()),
  response_modes_supported: z.array(z.string()),
  grant_types_supported: z.array(z.string()),
  code_challenge_methods_supported: z.array(z.string()),
  authorization_response_iss_parameter_supported: z.boolean(),
  token_endpoint_auth_methods_supported: z.array(z.string()),
  revocation_endpoint_auth_methods_supported: z.array(z.string()),
  client_id_metadata_document_supported: z.boolean(),
});

/** RFC 8414 authorization server metadata. */
export function authorizationServerMetadata(origin: string): z.input<typeof authorizationServerSchema> {
  return {
    issuer: origin,
    authorization_endpoint: `${origin}/oauth/authorize`,
    token_endpoint: `${origin}/oauth/token`,
    registration_endpoint: `${origin}/oauth/register`,
    revocation_endpoint: `${origin}/oauth/revoke`,
    scopes_supported: SCOPES,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    // RFC 9207: the redirect back to the client names the issuer, against mix-up attacks.
    authorization_response_iss_parameter_supported: true,
    token_endpoint_auth_methods_supported: ['none', 'client_secret_post', 'client_secret_basic'],
    revocation_endpoint_auth_methods_supported: ['none', 'client_secret_post', 'client_secret_basic'],
    // A client_id may be the https URL of the client's metadata document (src/oauth/client-metadata.ts).
    client_id_metadata_document_supported: true,
  };
}
