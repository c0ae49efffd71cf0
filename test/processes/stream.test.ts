import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { patch, post, useBase } from '../helpers/http.js';
import { serviceEnv, startApi, stopped, waitForListening, type Started } from '../helpers/processes.js';
import { freePort, tempDir } from '../helpers/servers.js';
import { standaloneApiWithCatalog } from '../helpers/standalone.js';
import { collect } from '../helpers/stream.js';

describe('the change stream across API processes', function () {
  this.timeout(90_000);
  const started: Started[] = [];
  afterEach(async () => {
    for (const p of started.splice(0)) await stopped(p.child);
  });

  it('a change made through one API process is an event on a stream served by another', async () => {
    const [portA, portB] = [await freePort(), await freePort()];
    const admin = `adm_stream_${process.pid}`;
    const a = startApi(serviceEnv(portA, { ADMIN_API_KEY: admin }));
    const b = startApi(serviceEnv(portB, { ADMIN_API_KEY: admin }));
    started.push(a, b);
    await Promise.all([waitForListening(a, 60_000), waitForListening(b, 60_000)]);
    const baseA = `http://127.0.0.1:${portA}`;
    const baseB = `http://127.0.0.1:${portB}`;
    const call = (path: string, token: string, body: unknown, f = post) =>
      f(path, token, body).then((r) => (expect(r.status, `${path} ${r.text}`).to.be.below(300), r.body));
    useBase(baseA);
    try {
      const app = await call('/apps', admin, { name: 'two processes' });
      const s = collect(baseB, app.id, app.api_key);
      try {
        await s.waitFor((e) => e.type === 'ready');
        await call(`/apps/${app.id}/entitlements`, app.api_key, { id: 'calls', type: 'usage', name: 'Calls' });
        await call(`/apps/${app.id}/plans`, app.api_key, { id: 'free', name: 'Free', isFree: true });
        await call(`/apps/${app.id}/plans/free/entitlements`, app.api_key, { id: 'calls', max: 10 });
        await call(`/apps/${app.id}/namespaces`, app.api_key, { id: 'ada' });
        await call(`/apps/${app.id}/namespaces/ada/usage/calls/amount`, app.api_key, { amount: 7 });
        await call(`/apps/${app.id}/namespaces/ada`, app.api_key, { name: 'Ada' }, patch);
        await s.waitFor((e) => e.type === 'catalog');
        await s.waitFor((e) => e.type === 'account' && e.data.accountId === 'ada');
        const usage = await s.waitFor((e) => e.type === 'usage' && e.data.usage === 7);
        expect(usage.data).to.include({ accountId: 'ada', entitlementId: 'calls' });
      } finally {
        s.close();
      }
      // A process stopping with a stream open ends the stream and exits cleanly.
      const open = collect(baseB, app.id, app.api_key);
      await open.waitFor((e) => e.type === 'ready');
      expect(await stopped(b.child)).to.equal(0);
      expect(await open.ended).to.equal(null);
    } finally {
      useBase(undefined);
    }
  });

  it('local evaluation: the API stopped, checks answer from memory and tracked usage is counted exactly once after', async () => {
    const { api, client, restart } = await standaloneApiWithCatalog('offline', started);
    const file = path.join(tempDir('offerkit-buffer-'), 'usage.jsonl');
    const local = client.local({ bufferFile: file });
    await local.ready();
    await local.load('ada');
    expect(await stopped(api.child)).to.equal(0);
    // Unreachable: answers from memory, usage kept in order in the file.
    for (let i = 0; i < 5; i++) await local.track('ada', 'calls', 2);
    expect(local.can('ada', 'calls')).to.equal(true);
    expect(local.can('ada', 'sso')).to.equal(false);
    expect(local.access('ada')!.entitlements[0].usage).to.equal(10);
    await new Promise((r) => setTimeout(r, 500));
    expect(local.pending).to.equal(5);
    // The client itself restarts: a new evaluator on the same file sends what the first did not.
    await local.close();
    expect(fs.readFileSync(file, 'utf8').trim().split('\n')).to.have.length(5);
    const again = client.local({ bufferFile: file });
    await again.track('ada', 'calls', 1);
    await restart();
    await again.flush(30_000);
    expect((await client.usage.get('ada', 'calls')).count).to.equal(11);
    await again.close();
    expect(fs.readFileSync(file, 'utf8')).to.equal('');
  });
});
