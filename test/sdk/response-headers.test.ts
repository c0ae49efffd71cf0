// What a caller can read of an answer's headers through the SDK, against the real API: `.asResponse()` (the fetch
// Response), `.withResponse()` (request id, replay, rate limit), and on errors `err.response` (`Retry-After` and
// `RateLimit-*` of a real 429). The call signatures are the same as without them.
import { expect } from 'chai';
import { APIError, PublishableClient, RateLimitError, SecretClient } from '@offerkit/sdk';
import { createTestApp, type TestApp } from '../helpers/factories.js';
import { testEnv } from '../helpers/servers.js';

describe("SDK: reading an answer's headers", function () {
  this.timeout(60_000);
  let app: TestApp;
  let secret: SecretClient;
  let pub: PublishableClient;

  before(async () => {
    app = await createTestApp();
    secret = new SecretClient({ secretKey: app.api_key, appId: app.id, baseUrl: testEnv().baseUrl });
    pub = new PublishableClient({ publishableKey: app.public_key, appId: app.id, baseUrl: testEnv().baseUrl });
    await secret.plans.create({ id: 'free', name: 'Free', isFree: true, pricingCard: { monthlyPrice: 0 } });
  });

  it('asResponse: the fetch Response, its body unread and readable, the call made once', async () => {
    const call = secret.accounts.create({ id: 'ada' }, { idempotencyKey: 'ada-1' });
    const raw = await call.asResponse();
    expect(raw).to.be.instanceOf(Response);
    expect(raw.status).to.equal(201);
    expect(raw.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
    expect(raw.headers.get('idempotent-replayed')).to.equal(null);
    expect((await raw.json()).id).to.equal('ada');
    // The same promise also gives the body and the parsed headers: one request, not three.
    const { data, response } = await call.withResponse();
    expect(data.id).to.equal('ada');
    expect(response.requestId).to.equal(raw.headers.get('x-request-id'));
    expect((await call).id).to.equal('ada');
    // A replay: the header as sent, and as the SDK reads it.
    const again = secret.accounts.create({ id: 'ada' }, { idempotencyKey: 'ada-1' });
    expect((await again.asResponse()).headers.get('idempotent-replayed')).to.equal('true');
    expect((await again.withResponse()).response.replayed).to.equal(true);
  });

  it('a real 429: RateLimitError with retryAfter and the rate limit from its headers', async () => {
    // The publishable key's limit is per second and client address; lowered for this test (as test/api/oauth.test.ts
    // does), so a handful of calls at once passes it. Unretried, so the 429 reaches the caller.
    const config = testEnv().deps.config as { RATE_LIMIT_PER_SECOND: number };
    const before = config.RATE_LIMIT_PER_SECOND;
    config.RATE_LIMIT_PER_SECOND = 3;
    const limit = 3;
    let results: PromiseSettledResult<unknown>[];
    try {
      results = await Promise.allSettled(
        Array.from({ length: 12 }, () => pub.plans.listPricingCards({ maxRetries: 0 })),
      );
    } finally {
      config.RATE_LIMIT_PER_SECOND = before;
    }
    const refused = results
      .filter((r): r is PromiseRejectedResult => r.status === 'rejected')
      .map((r) => r.reason as APIError);
    expect(refused.length, 'some calls were refused').to.be.greaterThan(0);
    const err = refused[0];
    expect(err).to.be.instanceOf(RateLimitError);
    expect(err.status).to.equal(429);
    expect((err as RateLimitError).retryAfter).to.be.within(1, 2);
    expect(err.response.retryAfter).to.equal(Number(err.headers.get('retry-after')));
    expect(err.response.rateLimit).to.deep.include({ limit, remaining: 0 });
    expect(err.requestId).to.match(/^[0-9a-f-]{36}$/);
  });
});
