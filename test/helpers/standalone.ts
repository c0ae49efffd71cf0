// An API process of its own on the suite's servers, with an app and the small catalog the local-evaluation tests
// read (a usage entitlement `calls`, a boolean `sso`, a free plan with 100 calls, the account `ada`): the set-up
// test/processes/stream.test.ts (the TypeScript SDK) and test/sdk/python-local.test.ts (the Python SDK) share, each
// then stopping and starting the process to test what a client does while the API is away.
import { SecretClient } from '@offerkit/sdk';
import { post, useBase } from './http.js';
import { serviceEnv, startApi, waitForListening, type Started } from './processes.js';
import { freePort } from './servers.js';

export interface StandaloneApi {
  /** The running API process (a new one after `restart`). */
  api: Started;
  base: string;
  app: { id: string; api_key: string };
  /** The secret-key client of the app, on this process, without retries (an outage shows at once). */
  client: SecretClient;
  /** Starts the API again on the same port and environment (after the test stopped it) and waits until it listens. */
  restart(): Promise<Started>;
}

/**
 * Starts the API process and seeds the app; every process it starts is pushed onto `started`, which the caller's
 * afterEach stops (`stopped` of test/helpers/processes.ts), also when the test failed half way.
 */
export async function standaloneApiWithCatalog(name: string, started: Started[]): Promise<StandaloneApi> {
  const port = await freePort();
  const admin = `adm_${name.replace(/\W+/g, '_')}_${process.pid}`;
  const env = serviceEnv(port, { ADMIN_API_KEY: admin });
  const start = async () => {
    const p = startApi(env);
    started.push(p);
    await waitForListening(p, 60_000);
    return p;
  };
  const base = `http://127.0.0.1:${port}`;
  const self: StandaloneApi = {
    api: await start(),
    base,
    app: { id: '', api_key: '' },
    client: undefined as unknown as SecretClient,
    restart: async () => (self.api = await start()),
  };
  useBase(base);
  try {
    self.app = (await post('/apps', admin, { name })).body as { id: string; api_key: string };
  } finally {
    useBase(undefined);
  }
  const client = new SecretClient({ secretKey: self.app.api_key, appId: self.app.id, baseUrl: base, maxRetries: 0 });
  await client.entitlements.create({ id: 'calls', type: 'usage', name: 'Calls' });
  await client.entitlements.create({ id: 'sso', type: 'boolean', name: 'SSO' });
  await client.plans.create({ id: 'free', name: 'Free', isFree: true });
  await client.plans.attachEntitlement('free', { id: 'calls', max: 100 });
  await client.accounts.create({ id: 'ada' });
  self.client = client;
  return self;
}
