// The components' return addresses (packages/elements/src/returns.ts), as pure functions: a trip's address is the
// page's plus the marker; back from the provider, the address is put back as it was, whatever the provider did to
// the host's own parameters (appended beside them, as PayPal documents, or written over them, as the stand-in does
// for an order's `token`). The browser tests drive the same code through real returns.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect } from 'chai';
import * as esbuild from 'esbuild';

interface Returns {
  RETURN_PARAM: string;
  newTrip(back: string): { nonce: string; back: string; url: string };
  returnedNonce(href: string): string | null;
  isReturnOf(trip: { nonce: string; back: string } | null, href?: string): boolean;
  restoredAddress(href: string, back: string): string;
}

describe('elements: return addresses marked and put back (returns.ts)', function () {
  this.timeout(60_000);
  let r: Returns;
  let dir: string;
  before(async () => {
    // Built as the bundle builds it (the module uses the browser's globals only when called without arguments).
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'elements-returns-'));
    const file = path.join(dir, 'returns.mjs');
    await esbuild.build({
      entryPoints: [path.resolve('packages/elements/src/returns.ts')],
      outfile: file,
      bundle: true,
      format: 'esm',
      logLevel: 'warning',
    });
    r = (await import(pathToFileURL(file).href)) as Returns;
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  const page = 'https://shop.example/account?app=app_1&token=act_host.sig&tab=billing';

  it("a trip's address is the page's with the marker; only that nonce is its return", () => {
    const trip = r.newTrip(page);
    expect(trip.back).to.equal(page);
    expect(trip.nonce).to.match(/^[0-9a-f]{18}$/);
    expect(r.newTrip(page).nonce, 'a new nonce each trip').to.not.equal(trip.nonce);
    const url = new URL(trip.url);
    expect(url.searchParams.get(r.RETURN_PARAM)).to.equal(trip.nonce);
    url.searchParams.delete(r.RETURN_PARAM);
    expect(url.toString()).to.equal(page);
    expect(r.returnedNonce(`${trip.url}&subscription_id=I-1`)).to.equal(trip.nonce);
    expect(r.isReturnOf(trip, `${trip.url}&subscription_id=I-1`)).to.equal(true);
    expect(r.isReturnOf(trip, `${page}&subscription_id=I-1`), 'unmarked: the host page').to.equal(false);
    expect(r.isReturnOf(trip, `${page}&${r.RETURN_PARAM}=abc`), "another trip's").to.equal(false);
    expect(r.isReturnOf(null, trip.url)).to.equal(false);
  });

  it('the address put back: marker and provider parameters gone, the host token kept in its place', () => {
    const { url } = r.newTrip(page);
    // PayPal appends: the host's token first, the provider's after it.
    expect(r.restoredAddress(`${url}&subscription_id=I-1&ba_token=BA-1&token=EC-9`, page)).to.equal(page);
    // Written over (the stand-in's order return): the host's value comes back, in its place.
    const over = new URL(url);
    over.searchParams.set('token', 'ORDER-1');
    over.searchParams.set('PayerID', 'P1');
    expect(r.restoredAddress(over.toString(), page)).to.equal(page);
    // A page without a token of its own loses the provider's; a parameter the page added meanwhile stays.
    const plain = 'https://shop.example/pricing?plan=pro';
    const back = new URL(r.newTrip(plain).url);
    back.searchParams.append('token', 'EC-9');
    back.searchParams.append('PayerID', 'P1');
    back.searchParams.append('utm', 'mail');
    expect(r.restoredAddress(back.toString(), plain)).to.equal('https://shop.example/pricing?plan=pro&utm=mail');
    // Nothing left: no stray `?`.
    const bare = 'https://shop.example/pricing';
    expect(r.restoredAddress(`${r.newTrip(bare).url}&subscription_id=I-1`, bare)).to.equal(bare);
  });
});
