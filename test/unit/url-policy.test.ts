// The webhook address policy's view of an address (src/webhooks/url-policy.ts): an IPv6 spelling that carries an
// IPv4 address is what that address is, and never more public than its own range.
import { expect } from 'chai';
import { addressRange, checkWebhookUrl, isPublicAddress } from '../../src/webhooks/url-policy.js';

const policy = { allowPrivate: false, resolve: async () => ['93.184.215.14'] };

describe('the webhook address policy', () => {
  it('judges IPv4-compatible, mapped, SIIT, NAT64, 6to4 and Teredo spellings by the IPv4 address they carry', () => {
    const cases: [string, string, string | undefined][] = [
      ['::7f00:1', 'loopback', '127.0.0.1'], // [::127.0.0.1]
      ['::ffff:7f00:1', 'loopback', undefined], // mapped: ipaddr turns it into 127.0.0.1 itself
      ['::ffff:0:7f00:1', 'loopback', '127.0.0.1'],
      ['::a00:1', 'private', '10.0.0.1'],
      ['64:ff9b::a9fe:a9fe', 'linkLocal', '169.254.169.254'],
      ['2002:7f00:1::', 'loopback', '127.0.0.1'],
      ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'loopback', '127.0.0.1'], // Teredo: the client address inverted
    ];
    for (const [address, range, reaches] of cases) {
      expect(addressRange(address), address).to.deep.equal(reaches ? { range, reaches } : { range });
      expect(isPublicAddress(address), address).to.equal(false);
    }
  });

  it('refuses embeddings of public addresses too (never more public than their own range), keeps public ones public', () => {
    for (const address of ['::808:808', '64:ff9b::808:808', '2002:808:808::1', '1::1', '::', '::1'])
      expect(isPublicAddress(address), address).to.equal(false);
    for (const address of ['8.8.8.8', '2606:4700::1111', '::ffff:8.8.8.8'])
      expect(isPublicAddress(address), address).to.equal(true);
  });

  it('says what an embedded spelling stands for', async () => {
    const refused = (url: string) =>
      checkWebhookUrl(url, policy).then(
        () => 'accepted',
        (err: Error) => err.message,
      );
    expect(await refused('http://[::127.0.0.1]/x')).to.equal(
      'must be a public address (::7f00:1 is not: it stands for 127.0.0.1, loopback)',
    );
    expect(await refused('http://[::ffff:127.0.0.1]/x')).to.equal('must be a public address (::ffff:7f00:1 is not)');
    expect(await refused('https://hooks.example/x')).to.equal('accepted');
    const sneaky = { allowPrivate: false, resolve: async () => ['::7f00:1'] };
    expect(await checkWebhookUrl('https://sneaky.example/x', sneaky).catch((e: Error) => e.message)).to.equal(
      'must be a public address (sneaky.example resolves to ::7f00:1: it stands for 127.0.0.1, loopback)',
    );
  });
});
