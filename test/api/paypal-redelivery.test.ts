// The stand-in redelivers a notification its listener did not accept, as PayPal does ("up to 25 times over the
// course of 3 days or until it receives a 2xx"), with a short first interval here (`notificationRetry.firstMs`).
import fs from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import path from 'node:path';
import { expect } from 'chai';
import {
  NOTIFICATION_RETRIES,
  NOTIFICATION_RETRY_SPAN_MS,
  notificationRetryDelays,
} from '../../src/dev/paypal-standin-notifications.js';
import { PayPalStandIn } from '../../src/dev/paypal-standin.js';
import { PayPalProvider } from '../../src/payments/paypal.js';
import { startReceiver } from '../helpers/receiver.js';
import { tempDir } from '../helpers/servers.js';
import { eventually } from '../helpers/wait.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('PayPal stand-in: redelivery of notifications a listener did not accept', () => {
  it('the schedule: 25 retries, doubling from the first interval, adding up to 3 days', () => {
    const delays = notificationRetryDelays();
    expect(delays).to.have.length(NOTIFICATION_RETRIES);
    expect(delays.slice(0, 4)).to.deep.equal([30_000, 60_000, 120_000, 240_000]);
    for (let i = 1; i < delays.length; i++) expect(delays[i]).to.be.at.least(delays[i - 1]);
    expect(Math.abs(delays.reduce((a, b) => a + b, 0) - NOTIFICATION_RETRY_SPAN_MS)).to.be.below(1000);
    expect(notificationRetryDelays(100).slice(0, 3)).to.deep.equal([100, 200, 400]);
  });

  it('a 503 and a dropped connection are sent again (the same event, a new signed transmission) until a 2xx', async () => {
    const standin = new PayPalStandIn({ credentials: { c: 's' }, notificationRetry: { firstMs: 100 } });
    // 503, then no answer at all (the connection closed without one), then 200.
    const received: { headers: http.IncomingHttpHeaders; body: string }[] = [];
    const server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        received.push({ headers: req.headers, body });
        if (received.length === 2) req.socket.destroy();
        else res.writeHead(received.length === 1 ? 503 : 200).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const receiver = {
      url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/hooks`,
      received,
      close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
    };
    const provider = new PayPalProvider({ clientId: 'c', clientSecret: 's', baseUrl: await standin.start() });
    try {
      const hook = await provider.registerWebhook(receiver.url, ['*']);
      const note = await standin.notify('c', 'BILLING.SUBSCRIPTION.ACTIVATED', { id: 'I-REDELIVER' });
      await eventually(async () => (received.length >= 3 ? true : undefined), 20_000);
      await sleep(1000); // a 2xx ends it: nothing more comes
      expect(receiver.received, 'three attempts, then nothing').to.have.length(3);
      const events = receiver.received.map((r) => JSON.parse(r.body) as { id: string });
      expect(new Set(events.map((e) => e.id))).to.deep.equal(new Set([note.id]));
      const transmissions = receiver.received.map((r) => r.headers['paypal-transmission-id']);
      expect(new Set(transmissions).size, 'each attempt a transmission of its own').to.equal(3);
      for (const r of receiver.received)
        expect(
          await provider.verifyNotification({
            headers: r.headers as Record<string, string>,
            body: JSON.parse(r.body),
            webhookId: hook.id,
          }),
          'every attempt verifies',
        ).to.equal(true);
      expect(standin.sent.map((s) => [s.attempt, s.status])).to.deep.equal([
        [1, 503],
        [2, null],
        [3, 200],
      ]);
    } finally {
      await standin.stop();
      await receiver.close();
    }
  });

  it('a redelivery owed when the stand-in stops is kept in its state file and sent after its next start', async () => {
    const dir = tempDir('offerkit-standin-');
    const statePath = path.join(dir, 'state.json');
    const receiver = await startReceiver((n) => ({ status: n === 0 ? 500 : 200 }));
    let standin = new PayPalStandIn({ credentials: { c: 's' }, statePath, notificationRetry: { firstMs: 60_000 } });
    try {
      const provider = new PayPalProvider({ clientId: 'c', clientSecret: 's', baseUrl: await standin.start() });
      await provider.registerWebhook(receiver.url, ['*']);
      await standin.notify('c', 'PAYMENT.SALE.COMPLETED', { billing_agreement_id: 'I-KEPT' });
      expect(receiver.received).to.have.length(1);
      await standin.stop();
      const saved = JSON.parse(fs.readFileSync(statePath, 'utf8')) as { redeliveries: Record<string, unknown> };
      expect(Object.keys(saved.redeliveries)).to.have.length(1);
      // Started again with the due time already passed: the owed attempt goes out at once.
      saved.redeliveries[Object.keys(saved.redeliveries)[0]] = {
        ...(saved.redeliveries[Object.keys(saved.redeliveries)[0]] as object),
        dueAt: Date.now() - 1,
      };
      fs.writeFileSync(statePath, JSON.stringify(saved));
      standin = new PayPalStandIn({ credentials: { c: 's' }, statePath });
      await standin.start();
      await receiver.waitFor(2, 10_000);
      expect(JSON.parse(receiver.received[1].body)).to.deep.include({ event_type: 'PAYMENT.SALE.COMPLETED' });
      await eventually(async () =>
        Object.keys((JSON.parse(fs.readFileSync(statePath, 'utf8')) as typeof saved).redeliveries).length === 0
          ? true
          : undefined,
      );
    } finally {
      await standin.stop();
      await receiver.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
