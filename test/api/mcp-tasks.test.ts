import { expect } from 'chai';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { billingApp, connectProvider, createTestApp, seededApp, type TestApp } from '../helpers/factories.js';
import { get, patch, post } from '../helpers/http.js';
import { connectMcp, jsonSchemaValidatorOfTests, mcpPost, mcpUrl } from '../helpers/mcp.js';
import { signInOAuth } from '../helpers/oauth.js';
import { startReceiver } from '../helpers/receiver.js';
import { testEnv } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';
import { temporalWorkflowUrl } from '../../src/temporal/ui.js';

// Issue 43 item 2: the MCP Tasks extension (io.modelcontextprotocol/tasks, 2026-07-28) backed by the workflows the
// long-running tools already start: the task id leads to the workflow, tasks/get reads its state (the tool's result
// inlined once completed), tasks/cancel withdraws what can be withdrawn. Clients without the extension get today's
// answers. Requests go on the wire as a 2026-07-28 client sends them (the v2 SDK client has no Tasks runtime yet).

const TASKS = 'io.modelcontextprotocol/tasks';
const meta = (tasks: boolean) => ({
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'tasks-client', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': tasks ? { extensions: { [TASKS]: {} } } : {},
});
/** The official v2 SDK client pinned to 2026-07-28 (it declares no extension). */
async function connect2026(appId: string, token: string) {
  const transport = new StreamableHTTPClientTransport(mcpUrl(appId), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client(
    { name: 'v2-client', version: '2.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } }, jsonSchemaValidator: jsonSchemaValidatorOfTests },
  );
  await client.connect(transport);
  return client;
}
let ids = 0;
/** A 2026-07-28 request with its routing headers (Mcp-Name: the tool, or the task id for tasks/*). */
async function rpc(
  app: TestApp,
  method: string,
  params: Record<string, unknown>,
  opts: { token?: string; tasks?: boolean } = {},
) {
  const name = (method === 'tools/call' ? params.name : params.taskId) as string | undefined;
  const res = await mcpPost(
    app.id,
    { jsonrpc: '2.0', id: ++ids, method, params: { ...params, _meta: meta(opts.tasks ?? true) } },
    opts.token ?? app.api_key,
    { 'mcp-protocol-version': '2026-07-28', 'mcp-method': method, ...(name ? { 'mcp-name': name } : {}) },
  );
  // 200, or 400 for the errors the SDK answers so (-32021 among them).
  expect(res.status, res.text).to.equal(res.body.error?.code === -32021 ? 400 : 200);
  return res.body as { result?: Record<string, any>; error?: { code: number; message: string; data?: any } };
}
const callTool = async (app: TestApp, name: string, args: Record<string, unknown>, opts = {}) =>
  (await rpc(app, 'tools/call', { name, arguments: args }, opts)).result!;
const taskGet = async (app: TestApp, taskId: string, opts = {}) =>
  (await rpc(app, 'tasks/get', { taskId }, opts)).result!;
/** Polls tasks/get until the task leaves `working`. */
const settled = (app: TestApp, taskId: string, ms = 30_000) =>
  eventually(async () => {
    const t = await taskGet(app, taskId);
    return t.status !== 'working' ? t : undefined;
  }, ms);
/** Where a link leads: the service's /open hop (which records the buyer opened it), or the provider's page itself. */
async function providerPage(link: string) {
  if (!link.includes('/open')) return link;
  const res = await fetch(link, { redirect: 'manual' });
  return res.headers.get('location')!;
}
/** The buyer clicks through the provider's pages and comes back to where it sends them. */
async function buyer(link: string, decision: 'approve' | 'cancel') {
  let next = await testEnv().paypal.approve(await providerPage(link), decision);
  while (next.includes('/checkoutnow')) next = await testEnv().paypal.approve(next, decision);
  const back = new URL(next);
  if (back.origin === new URL(testEnv().baseUrl).origin) await get(back.pathname + back.search);
}

describe('MCP Tasks backed by workflows (2026-07-28)', function () {
  this.timeout(120_000);

  describe('create_upgrade_link', () => {
    let app: TestApp;
    let base: string;
    beforeEach(async () => {
      ({ app, base } = await seededApp({ name: 'Tasks', accounts: [{ id: 'f1', plan: 'free' }] }));
      await connectProvider(app); // no pricing page: the provider's approval link, a checkout and its workflow
    });

    it('answers a task; tasks/get is working, then completed with the subscription once the buyer approves', async () => {
      const created = await callTool(app, 'create_upgrade_link', { namespaceId: 'f1', plan: 'pro' });
      expect(created).to.include({ resultType: 'task', status: 'working', ttlMs: null, pollIntervalMs: 5000 });
      expect(created.taskId).to.match(/^task_[\w-]+\.[\w-]{43}$/);
      expect(created).to.not.have.property('content');
      const checkout = created._meta['offerkit/task'].follows.id as string;
      expect(created._meta['offerkit/task']).to.deep.include({
        tool: 'create_upgrade_link',
        follows: { kind: 'checkout', id: checkout },
      });
      expect(created._meta['offerkit/task'].workflows[0].id).to.equal(`checkout/${checkout}`);
      // Its Temporal UI page, as the timeline links it (none in the tests: no UI runs).
      expect(created._meta['offerkit/task'].workflows[0].url).to.equal(
        temporalWorkflowUrl(testEnv().deps.config, `checkout/${checkout}`),
      );
      const link = (await get(`${base}/checkouts/${checkout}`, app.api_key)).body.approve_url as string;
      expect(created._meta['offerkit/task'].approve_url).to.equal(link);
      expect(created.statusMessage).to.include(link).and.include('hand the person this link');

      const working = await taskGet(app, created.taskId);
      expect(working).to.include({ resultType: 'complete', taskId: created.taskId, status: 'working' });
      expect(working).to.not.have.property('result');
      expect(working.createdAt).to.equal(created.createdAt);

      await buyer(link, 'approve');
      const done = await settled(app, created.taskId);
      expect(done.status, done.statusMessage).to.equal('completed');
      expect(done.result.isError).to.equal(false);
      expect(done.result.structuredContent).to.deep.include({
        account: 'f1',
        plan: { id: 'pro', name: 'Pro' },
        kind: 'provider_approval',
        checkout,
        status: 'completed',
      });
      expect(done.result.structuredContent.subscription).to.include({ status: 'active', plan: 'pro' });
      expect(JSON.parse(done.result.content[0].text)).to.deep.equal(done.result.structuredContent);
      expect((await get(`${base}/namespaces/f1`, app.api_key)).body.plan).to.equal('pro');
    });

    it('one the buyer never approves: completed with a tool error once it expires (app clock, 24 hours)', async () => {
      const created = await callTool(app, 'create_upgrade_link', { namespaceId: 'f1', plan: 'pro' });
      const clock = (await get(`${base}/test-clock`, app.api_key)).body;
      const moved = await post(`${base}/test-clock/advance`, app.api_key, {
        to: new Date(Date.parse(clock.now) + 25 * 3_600_000).toISOString(),
      });
      expect(moved.status, moved.text).to.equal(200);
      const done = await settled(app, created.taskId);
      expect(done.status).to.equal('completed');
      expect(done.result.isError).to.equal(true);
      expect(done.result.structuredContent).to.include({ status: 410, reason: 'expired' });
      expect(done.result.content[0].text).to.match(/^Error 410: The buyer did not approve by .* nothing was charged/);
    });

    it('tasks/cancel withdraws the waiting checkout: cancelled, and the buyer can no longer pay it', async () => {
      const created = await callTool(app, 'create_upgrade_link', { namespaceId: 'f1', plan: 'pro' });
      const checkout = created._meta['offerkit/task'].follows.id as string;
      expect((await rpc(app, 'tasks/cancel', { taskId: created.taskId })).result).to.deep.include({
        resultType: 'complete',
      });
      const after = await taskGet(app, created.taskId);
      expect(after.status, after.statusMessage).to.equal('cancelled');
      expect(after).to.not.have.property('result');
      expect((await get(`${base}/checkouts/${checkout}`, app.api_key)).body.status).to.equal('expired');
      // Cancelling again is acknowledged and changes nothing.
      expect((await rpc(app, 'tasks/cancel', { taskId: created.taskId })).error).to.equal(undefined);
      expect((await taskGet(app, created.taskId)).status).to.equal('cancelled');
    });

    it('a task is its caller\'s: another app, an OAuth connection of the same app, a forged id are "not found"', async () => {
      const created = await callTool(app, 'create_upgrade_link', { namespaceId: 'f1', plan: 'pro' });
      // The app's keys are one caller: the admin key reads the secret key's task.
      expect((await taskGet(app, created.taskId, { token: testEnv().adminKey })).status).to.equal('working');
      const other = await createTestApp('Other');
      const { accessToken } = await signInOAuth(app.id, { level: 'write' });
      for (const [who, res] of [
        ['another app', await rpc(other, 'tasks/get', { taskId: created.taskId })],
        ['an OAuth connection', await rpc(app, 'tasks/get', { taskId: created.taskId }, { token: accessToken })],
        ['cancel by another app', await rpc(other, 'tasks/cancel', { taskId: created.taskId })],
        ['a forged id', await rpc(app, 'tasks/get', { taskId: created.taskId.replace(/\.\w/, '.A') })],
        ['no task id of ours', await rpc(app, 'tasks/get', { taskId: 'chk_123' })],
      ] as const)
        expect(res.error, who).to.deep.equal({ code: -32602, message: 'Failed to retrieve task: Task not found' });
      expect((await taskGet(app, created.taskId)).status, 'untouched').to.equal('working');
      // A client that does not declare the extension may not use it (-32021, naming it).
      const undeclared = await rpc(app, 'tasks/get', { taskId: created.taskId }, { tasks: false });
      expect(undeclared.error).to.deep.include({ code: -32021 });
      expect(undeclared.error!.data).to.deep.equal({ requiredCapabilities: { extensions: { [TASKS]: {} } } });
    });

    it("clients without the extension get today's answer: the v2 client pinned to 2026-07-28, and a 2025 client", async () => {
      const v2 = await connect2026(app.id, app.api_key);
      try {
        expect(v2.getServerCapabilities()?.extensions).to.deep.equal({ [TASKS]: {} });
        const result = await v2.callTool({
          name: 'create_upgrade_link',
          arguments: { namespaceId: 'f1', plan: 'pro' },
        });
        expect(result.isError).to.equal(false);
        expect(result.structuredContent).to.include({ kind: 'provider_approval', account: 'f1' });
      } finally {
        await v2.close();
      }
      const { client: v1 } = await connectMcp(app.id, { key: app.api_key });
      try {
        const result = await v1.callTool({
          name: 'create_upgrade_link',
          arguments: { namespaceId: 'f1', plan: 'pro' },
        });
        expect(result).to.not.have.property('taskId');
        expect(result.structuredContent).to.include({ kind: 'provider_approval', account: 'f1' });
        expect(v1.getServerCapabilities()).to.not.have.property('extensions');
      } finally {
        await v1.close();
      }
      // Not a task either: a dry run, a refusal, and a pricing-page link (no checkout to follow).
      const dry = await callTool(app, 'create_upgrade_link', { namespaceId: 'f1', plan: 'pro', dry_run: true });
      expect(dry.structuredContent.dry_run.would).to.equal('call');
      const refused = await callTool(app, 'create_upgrade_link', { namespaceId: 'nobody', plan: 'pro' });
      expect(refused).to.include({ isError: true });
      await patch(`/apps/${app.id}`, app.api_key, { checkout_url: 'https://shop.example/pricing' });
      const page = await callTool(app, 'create_upgrade_link', { namespaceId: 'f1', plan: 'pro' });
      expect(page.structuredContent).to.include({ kind: 'pricing_page', checkout: null });
      expect(page).to.not.have.property('taskId');
    });
  });

  describe('create_topup_link', () => {
    let app: TestApp;
    let base: string;
    beforeEach(async () => {
      ({ app, base } = await seededApp({ name: 'Top-ups', accounts: [{ id: 't1', plan: 'free' }] }));
      await connectProvider(app);
      for (const [path, body] of [
        ['/entitlements', { id: 'credits', type: 'credits', name: 'AI credits' }],
        ['/credit-packs', { id: 'boost', pool: 'credits', amount: 1000, price: '10.00' }],
      ] as const) {
        const res = await post(`${base}${path}`, app.api_key, body);
        expect(res.status, res.text).to.equal(201);
      }
    });
    const balance = async () => {
      const res = await get(`${base}/namespaces/t1/credits`, app.api_key);
      expect(res.status, res.text).to.equal(200);
      return (res.body.data as { pool: string; balance: number }[]).find((p) => p.pool === 'credits')?.balance ?? 0;
    };
    const topups = async () =>
      ((await get(`${base}/namespaces/t1/credits/ledger`, app.api_key)).body.data as { kind: string }[]).filter(
        (r) => r.kind === 'topup',
      );
    const topup = () => callTool(app, 'create_topup_link', { packId: 'boost', namespaceId: 't1' });

    it('answers a task on the pack order; working until the buyer approves, then completed with the grant, once', async () => {
      const created = await topup();
      expect(created).to.include({ resultType: 'task', status: 'working', pollIntervalMs: 5000 });
      const order = created._meta['offerkit/task'].follows.id as string;
      expect(order).to.match(/^cpo_/);
      expect(created._meta['offerkit/task']).to.deep.include({
        tool: 'create_topup_link',
        follows: { kind: 'pack_order', id: order },
        workflows: [],
      });
      const link = (await get(`/apps/${app.id}/credit-pack-orders/${order}`, app.api_key)).body.approve_url as string;
      expect(created._meta['offerkit/task'].approve_url).to.equal(link);
      expect(created.statusMessage)
        .to.include(link)
        .and.include('credit pack boost (1000 credits credits for 10.00 USD)');
      const working = await taskGet(app, created.taskId);
      expect(working).to.include({ status: 'working' });
      expect(working).to.not.have.property('result');
      expect(await balance()).to.equal(0);

      await buyer(link, 'approve');
      const done = await settled(app, created.taskId);
      expect(done.status, done.statusMessage).to.equal('completed');
      expect(done.result.isError).to.equal(false);
      const result = done.result.structuredContent;
      expect(result).to.include({ object: 'credit_pack_order', id: order, status: 'completed', account: 't1' });
      expect(result.capture_id).to.match(/^CAP/);
      expect(result.granted).to.deep.equal({ grant: result.grant, pool: 'credits', amount: 1000 });
      expect(done.statusMessage).to.include(result.capture_id).and.include(result.grant);
      expect(JSON.parse(done.result.content[0].text)).to.deep.equal(result);
      // Polled again (and the capture's notification heard meanwhile): the same answer, granted once.
      await eventually(async () =>
        testEnv().paypal.sent.some(
          (n) => n.event.event_type === 'PAYMENT.CAPTURE.COMPLETED' && n.event.resource?.id === result.capture_id,
        ),
      );
      expect((await taskGet(app, created.taskId)).result).to.deep.equal(done.result);
      expect(await balance()).to.equal(1000);
      expect(await topups()).to.have.length(1);
    });

    it('tasks/cancel is acknowledged and withdraws nothing; a lost notification is settled by tasks/get; voided is an error', async () => {
      const created = await topup();
      const order = created._meta['offerkit/task'].follows.id as string;
      expect((await rpc(app, 'tasks/cancel', { taskId: created.taskId })).error).to.equal(undefined);
      expect((await taskGet(app, created.taskId)).status, 'PayPal cannot withdraw the order').to.equal('working');
      expect((await get(`/apps/${app.id}/credit-pack-orders/${order}`, app.api_key)).body.status).to.equal('created');
      // The buyer approves anyway, and PayPal's CHECKOUT.ORDER.APPROVED never arrives (nor does the buyer come back
      // to us): the task's polls capture it and grant.
      const link = created._meta['offerkit/task'].approve_url as string;
      const atPayPal = testEnv().paypal.order(new URL(link).searchParams.get('token')!)!;
      atPayPal.status = 'APPROVED';
      const done = await settled(app, created.taskId);
      expect(done.status, done.statusMessage).to.equal('completed');
      expect(done.result.structuredContent).to.include({ status: 'completed' });
      expect(atPayPal.status).to.equal('COMPLETED');
      expect(await balance()).to.equal(1000);

      // An order PayPal voided: completed with a tool error, nothing granted.
      const voided = await topup();
      const voidedOrder = voided._meta['offerkit/task'].follows.id as string;
      testEnv().paypal.order(new URL(voided._meta['offerkit/task'].approve_url).searchParams.get('token')!)!.status =
        'VOIDED';
      const ended = await settled(app, voided.taskId);
      expect(ended.status).to.equal('completed');
      expect(ended.result.isError).to.equal(true);
      expect(ended.result.structuredContent).to.include({ status: 409, reason: 'voided', order: voidedOrder });
      expect(ended.result.content[0].text).to.match(/^Error 409: PayPal voided the order .* nothing was charged/);
      expect((await get(`/apps/${app.id}/credit-pack-orders/${voidedOrder}`, app.api_key)).body.status).to.equal(
        'cancelled',
      );
      expect(await balance()).to.equal(1000);
      expect(await topups()).to.have.length(1);
    });
  });

  describe('change_subscription', () => {
    let app: TestApp;
    let base: string;
    beforeEach(async () => {
      ({ app, base } = await billingApp({ purchases: ['ada'] })); // Pro at $19/month
    });
    const change = (plan: string) =>
      callTool(app, 'change_subscription', { namespaceId: 'ada', plan, interval: 'month' });

    it('approved: completed with the subscription on the new plan; the task leads to the plan change and the actor', async () => {
      const created = await change('scale');
      expect(created).to.include({ resultType: 'task', status: 'working' });
      const change_id = created._meta['offerkit/task'].follows.id as string;
      expect(change_id).to.match(/^chg_/);
      expect(created._meta['offerkit/task'].workflows.map((w: { id: string }) => w.id)).to.deep.equal([
        `plan-change/${app.id}/ada/${change_id}`,
        `account/${app.id}/ada`,
      ]);
      const link = created._meta['offerkit/task'].approve_url as string;
      expect(link).to.match(/^http/);
      expect(created.statusMessage).to.include(link);
      await buyer(link, 'approve');
      const done = await settled(app, created.taskId);
      expect(done.status, done.statusMessage).to.equal('completed');
      expect(done.result.isError).to.equal(false);
      expect(done.result.structuredContent).to.include({ plan: 'scale', direction: 'upgrade', approve_url: null });
    });

    it('declined at the provider: completed with a tool error; tasks/cancel of another change withdraws it', async () => {
      const declined = await change('scale');
      await buyer(declined._meta['offerkit/task'].approve_url, 'cancel');
      const done = await settled(app, declined.taskId);
      expect(done.status, done.statusMessage).to.equal('completed');
      expect(done.result.isError).to.equal(true);
      expect(done.result.structuredContent).to.include({ status: 409, reason: 'refused' });

      // The actor may still be settling the refusal it heard (a 409 for a moment): asked again, as an agent would.
      const withdrawn = await eventually(async () => {
        const again = await change('scale');
        return again.resultType === 'task' ? again : undefined;
      });
      expect(withdrawn.status).to.equal('working');
      expect((await rpc(app, 'tasks/cancel', { taskId: withdrawn.taskId })).error).to.equal(undefined);
      const after = await settled(app, withdrawn.taskId);
      expect(after.status, after.statusMessage).to.equal('cancelled');
      expect((await get(`${base}/namespaces/ada/subscription`, app.api_key)).body.pending_change).to.equal(null);
      expect((await get(`${base}/namespaces/ada`, app.api_key)).body.plan).to.equal('pro');
    });
  });

  describe('webhooks', () => {
    it('retry_webhook_delivery and send_test_event: one attempt by the delivery workflow, followed to its result', async () => {
      const { app, base } = await seededApp({ name: 'Hooks' });
      let healthy = false;
      const r = await startReceiver(() => (healthy ? { status: 200, body: 'fine now' } : { status: 500 }));
      try {
        const ep = (await post(`${base}/webhooks`, app.api_key, { url: r.url, events: ['*'] })).body;
        await post(`${base}/plans`, app.api_key, { id: 'gold', name: 'Gold' });
        const [failed] = await eventually(async () => {
          const list = (await get(`${base}/webhooks/${ep.id}/deliveries`, app.api_key)).body.data;
          return list.length && list[0].status === 'failed' ? list : undefined;
        });
        const sent = r.received.length;
        healthy = true;
        const retry = await callTool(app, 'retry_webhook_delivery', { webhookId: ep.id, deliveryId: failed.id });
        expect(retry.resultType).to.equal('task');
        expect(retry._meta['offerkit/task'].workflows[0].id, 'the delivery workflow').to.equal(failed.id);
        const done = await settled(app, retry.taskId);
        expect(done.status).to.equal('completed');
        expect(done.result.structuredContent).to.deep.include({
          id: failed.id,
          status: 'succeeded',
          attempts: failed.attempts + 1,
          response_body: 'fine now',
        });
        expect(r.received).to.have.length(sent + 1);
        expect(r.received.at(-1)!.headers['webhook-id']).to.equal(failed.event_id);
        // tasks/cancel of a delivery is acknowledged; the attempt made stands.
        expect((await rpc(app, 'tasks/cancel', { taskId: retry.taskId })).error).to.equal(undefined);
        expect((await taskGet(app, retry.taskId)).status).to.equal('completed');

        // A test event to a disabled endpoint is still sent once (test semantics), and its 410 disables nothing.
        healthy = false;
        await patch(`${base}/webhooks/${ep.id}`, app.api_key, { enabled: false });
        const test = await callTool(app, 'send_test_event', { webhookId: ep.id });
        expect(test.resultType).to.equal('task');
        const tested = await settled(app, test.taskId);
        expect(tested.result.structuredContent).to.deep.include({ test: true, status: 'failed', attempts: 1 });
        expect(r.received).to.have.length(sent + 2);
        expect(JSON.parse(r.received.at(-1)!.body)).to.include({ test: true });
      } finally {
        await r.close();
      }
    });
  });
});
