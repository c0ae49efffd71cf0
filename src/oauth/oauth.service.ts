// The MCP server's OAuth 2.1 authorization server, by capability: discovery documents, client registration, the
// authorization request and consent, and the token endpoint. Routes (oauth.routes.ts) use them through this index.
export * from './metadata.js';
export * from './clients.service.js';
export * from './authorize.service.js';
export * from './token-exchange.service.js';
export { MetadataThrottled } from './client-metadata.js';
