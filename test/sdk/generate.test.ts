// The SDK is generated from the route table: the committed files are what the generator makes now, every route
// an app credential may call has an SDK name, and the typed events and 402 body match what the service sends.
import { expect } from 'chai';
import { z } from 'zod';
import type { LimitReachedBody as SdkLimitReachedBody, WebhookEventType } from '@offerkit/sdk';
import { OPERATIONS, WEBHOOK_EVENT_TYPES } from '@offerkit/sdk';
import { EVENT_TYPES } from '../../src/events/event-types.js';
import type { RouteDef } from '../../src/http/route.js';
import { routes } from '../../src/routes.js';
import type { LimitReachedBody as ServerLimitReachedBody } from '../../src/usage/upgrade.js';
import {
  generateSdk,
  forAppCredentials,
  routeKey,
  sdkName,
  sdkOperations,
  staleFiles,
} from '../../scripts/sdk/generate.js';
import { SDK_EXCLUDED } from '../../scripts/sdk/names.js';
import { eventDataSchemas, limitReachedBody } from '../../scripts/sdk/schemas.js';

// The SDK's 402 body and the service's are the same type (each assignable to the other).
const toSdk = (b: ServerLimitReachedBody): SdkLimitReachedBody => b;
const toServer = (b: SdkLimitReachedBody): ServerLimitReachedBody => b;
void toSdk;
void toServer;

describe('SDK: generated from the route table', function () {
  this.timeout(180_000);

  it('the committed SDK is what scripts/sdk/generate.ts makes from the route table now', async () => {
    expect(await staleFiles(), 'run npm run sdk:generate and commit the result').to.deep.equal([]);
  });

  it('every route a secret key, publishable key or account token may call has an SDK name (or is left out on purpose)', () => {
    const unnamed = routes.filter((r) => forAppCredentials(r) && !sdkName(r) && !SDK_EXCLUDED[routeKey(r)]);
    expect(unnamed.map(routeKey)).to.deep.equal([]);
    const names = routes.filter(forAppCredentials).map(sdkName).filter(Boolean);
    expect(new Set(names).size, 'names are unique').to.equal(names.length);
    // Exclusions name only routes that exist.
    const keys = new Set(routes.map(routeKey));
    expect(
      Object.keys(SDK_EXCLUDED).filter((k) => !keys.has(k)),
      'stale exclusions',
    ).to.deep.equal([]);
    // The built package offers exactly those operations, with the route's credentials.
    const ops = sdkOperations(routes);
    expect(OPERATIONS.map((o) => o.name)).to.deep.equal(ops.map((o) => o.name));
    const admin = OPERATIONS.filter((o) => o.auth.length === 0);
    expect(admin, 'admin-only routes are not in the SDK').to.deep.equal([]);
  });

  it('a new route shows up on the next run, and an unnamed one stops the generator', async () => {
    const extra = {
      method: 'POST',
      path: '/apps/:appId/namespaces/:accountId/usage/:entitlementId/reserve',
      auth: ['S', 'P'],
      summary: 'Reserve usage',
      tags: ['Usage'],
      params: z.object({ accountId: z.string(), entitlementId: z.string() }),
      body: z.object({ amount: z.number().int() }),
      response: z.object({ reservation: z.string() }),
      handler: () => ({ reservation: 'r' }),
    } as unknown as RouteDef;
    expect(() => sdkOperations([...routes, extra])).to.throw(/name these routes[\s\S]*reserve/);
    const named = { ...extra, sdk: 'usage.reserve' } as RouteDef;
    const files = await generateSdk([...routes, named]);
    const api = files['packages/sdk/src/generated/api.ts'];
    expect(api).to.include("name: 'usage.reserve'");
    expect(api).to.match(/reserve\(\s*accountId: string,\s*entitlementId: string,\s*body: UsageReserveBody/);
    expect(api).to.match(/usage: Pick<UsageApi, [^>]*'reserve'/); // the publishable key gets it too
    expect(files['packages/sdk/src/generated/openapi.ts']).to.include('reservation: string');
  });

  it('a field named like a closed set (status, direction, policy ...) typed as a plain string stops the generator', async () => {
    const loose = {
      method: 'GET',
      path: '/apps/:appId/namespaces/:accountId/renewal',
      auth: ['S'],
      sdk: 'accounts.renewal',
      summary: 'The renewal',
      tags: ['Accounts'],
      params: z.object({ accountId: z.string() }),
      response: z.object({ when: z.string(), change: z.object({ direction: z.string(), policy: z.string() }) }),
      handler: () => ({}),
    } as unknown as RouteDef;
    let refused: unknown = null;
    await generateSdk([...routes, loose]).catch((e: unknown) => (refused = e));
    expect(String(refused)).to.match(/closed set[\s\S]*accounts\.renewal\.change\.direction[\s\S]*change\.policy/);
    const typed = {
      ...loose,
      response: z.object({ change: z.object({ direction: z.enum(['upgrade', 'downgrade']), policy: z.literal('x') }) }),
    } as RouteDef;
    const files = await generateSdk([...routes, typed]);
    expect(files['packages/sdk/src/generated/openapi.ts']).to.include("direction: 'upgrade' | 'downgrade'");
  });

  it("every event type of the catalog is typed, and each type's sample fits its data type", () => {
    const schemas = eventDataSchemas(routes);
    const catalog = EVENT_TYPES.map((e) => e.type);
    expect([...WEBHOOK_EVENT_TYPES]).to.deep.equal(catalog);
    expect(Object.keys(schemas).sort()).to.deep.equal([...catalog].sort());
    for (const e of EVENT_TYPES) {
      const parsed = schemas[e.type].safeParse(e.sample());
      expect(parsed.success, `${e.type}: ${parsed.error?.message}`).to.equal(true);
    }
    const known: WebhookEventType = 'cancel_flow.saved';
    expect(catalog).to.include(known);
  });

  it('the 402 body schema describes what the service builds', () => {
    const sample: ServerLimitReachedBody = {
      error: 'limit_reached',
      message: 'Seats: 1 of 1 used.',
      entitlement: { id: 'seats', name: 'Seats', usage: 1, max: 1 },
      offer: null,
      retry_after_purchase: true,
    };
    expect(limitReachedBody.safeParse(sample).success).to.equal(true);
  });
});
