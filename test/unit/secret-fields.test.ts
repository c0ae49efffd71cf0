// Every credential a route answers is declared (docs/security.md, "Who sees which secret"): a response field named
// like one (a key, a signing or client secret, a token) is in the route's `secretFields` (so people get `[redacted]`
// and MCP tools never show it), or the route is one whose whole point is handing the credential to its caller, listed
// here with who that caller is.
import { expect } from 'chai';
import { z } from 'zod';
import { servedToPeople } from '../../src/http/router.js';
import { routes } from '../../src/routes.js';

const CREDENTIAL = /^(api_key|secret|client_secret|token|access_token|refresh_token|password)$/;

/** Routes that hand a credential to whoever called them on purpose, and to whom. */
const HANDOVER: Record<string, string> = {
  'apps.create': 'the admin key creates an app and gets its keys',
  'console.revealSecretKey': 'the explicit, logged reveal: owners and admins (its role)',
  'console.revealWebhookSecret': 'the explicit, logged reveal: members and above (its role)',
  'accounts.createToken': "a token for one account, minted by the app's backend (members in the console, logged)",
  'oauth.register': 'OAuth dynamic client registration: the client gets its own secret (RFC 7591)',
  'oauth.token': 'the OAuth token endpoint: the client gets its tokens (RFC 6749)',
  'orgs.listApps': "the admin key (the operator) lists an org's apps with their keys",
};

function credentialFields(schema: z.ZodType): string[] {
  const found = new Set<string>();
  const walk = (s: unknown) => {
    if (!s || typeof s !== 'object') return;
    const o = s as Record<string, unknown>;
    if (o.properties && typeof o.properties === 'object')
      for (const [k, v] of Object.entries(o.properties as Record<string, unknown>)) {
        if (CREDENTIAL.test(k)) found.add(k);
        walk(v);
      }
    for (const key of ['items', 'anyOf', 'oneOf', 'allOf', 'additionalProperties', 'prefixItems']) {
      const v = o[key];
      if (Array.isArray(v)) v.forEach(walk);
      else walk(v);
    }
  };
  walk(z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' }));
  return [...found];
}

describe('credentials in answers are declared', () => {
  it('each route answering a credential declares it secret, or hands it over on purpose', () => {
    const undeclared: string[] = [];
    for (const def of routes) {
      if (!def.response || HANDOVER[def.sdk]) continue;
      const hidden = new Set(def.secretFields ?? []);
      for (const field of credentialFields(def.response))
        if (!hidden.has(field)) undeclared.push(`${def.sdk} (${def.method} ${def.path}): ${field}`);
    }
    expect(undeclared).to.deep.equal([]);
  });

  it('the handover list names real routes, and every secret field of a tool or a console route is redacted', () => {
    const names = new Set(routes.map((r) => r.sdk));
    expect(Object.keys(HANDOVER).filter((k) => !names.has(k))).to.deep.equal([]);
    // A route served to people or as a tool that answers a secret field declares it (redacted on both doors).
    for (const def of routes.filter((r) => r.secretFields?.length))
      expect(servedToPeople(def) || def.auth.includes('C') || !!def.mcp, def.sdk).to.equal(true);
  });
});
