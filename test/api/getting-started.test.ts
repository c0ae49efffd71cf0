// The getting-started checklist's "components embedded" step (docs/console.md): counted from the first request with
// the publishable key that a browser sent from a page of another site, never from a server-side call.
import { expect } from 'chai';
import { createTestApp } from '../helpers/factories.js';
import { call, get } from '../helpers/http.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

describe('publishable_first_used_at: the components embedded in a page', () => {
  it("a server-side call, the service's own origin and `Origin: null` do not count; a page elsewhere does", async () => {
    const app = await createTestApp();
    // What was recorded, read from the table: `GET /apps/:appId` answers the process's cached app, which the apps
    // trigger refreshes a moment after the write (the mark does not wait for every process, as a key change does).
    const firstUse = async () => {
      const [row] = await testEnv()
        .deps.orm.em.getConnection()
        .execute<{ ms: string | null }[]>(
          'select extract(epoch from publishable_first_used_at) * 1000 as ms from apps where id = ?',
          [app.id],
        );
      return row.ms === null ? null : Number(row.ms);
    };
    const plans = (headers: Record<string, string> = {}) =>
      call('GET', `/apps/${app.id}/plans/pricing`, { token: app.public_key, headers });
    // The SDK or curl from a backend: no Origin.
    const first = await plans();
    expect(first.status, first.text).to.equal(200);
    expect(await firstUse()).to.equal(null);
    // A page of this service itself (its example page), a sandboxed frame or a file, another scheme.
    for (const origin of [testEnv().baseUrl, 'null', 'chrome-extension://abcdef', 'https://shop.example/path'])
      expect((await plans({ Origin: origin })).status, origin).to.equal(200);
    expect(await firstUse()).to.equal(null);
    // A page of the operator's site.
    expect((await plans({ Origin: 'https://shop.example' })).status).to.equal(200);
    const at = await firstUse();
    expect(at).to.be.a('number');
    // Recorded once.
    await plans({ Origin: 'https://other.example' });
    expect(await firstUse()).to.equal(at);
    // The app's own answer says it too, once this process has refreshed its cached app.
    const answered = await eventually(
      async () =>
        ((await get(`/apps/${app.id}`, app.api_key)).body.publishable_first_used_at as string | null) ?? undefined,
    );
    expect(Math.abs(Date.parse(answered) - at!)).to.be.lessThan(1);
  });
});
