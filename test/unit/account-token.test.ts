import { expect } from 'chai';
import { mintAccountToken, verifyAccountToken } from '../../src/http/account-token.js';

describe('account tokens', () => {
  const key = 'key_secret_one';
  const future = new Date(Date.now() + 3600_000);

  it('round-trips app, account and expiry', () => {
    const token = mintAccountToken('app_1', 'user 42', key, future);
    expect(token).to.match(/^act_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    const v = verifyAccountToken(token, 'app_1', key);
    expect(v?.accountId).to.equal('user 42');
    expect(v?.expiresAt.getTime()).to.equal(Math.floor(future.getTime() / 1000) * 1000);
  });
  it('rejects another app, another key, expiry and tampering', () => {
    const token = mintAccountToken('app_1', 'u1', key, future);
    expect(verifyAccountToken(token, 'app_2', key)).to.equal(null);
    expect(verifyAccountToken(token, 'app_1', 'key_regenerated')).to.equal(null);
    expect(
      verifyAccountToken(mintAccountToken('app_1', 'u1', key, new Date(Date.now() - 1000)), 'app_1', key),
    ).to.equal(null);
    const [payload, sig] = token.slice(4).split('.');
    const forged = Buffer.from(JSON.stringify({ a: 'app_1', n: 'admin', e: 9999999999 })).toString('base64url');
    expect(verifyAccountToken(`act_${forged}.${sig}`, 'app_1', key)).to.equal(null);
    expect(verifyAccountToken(`act_${payload}.${sig.slice(0, -2)}`, 'app_1', key)).to.equal(null);
    expect(verifyAccountToken(`act_${payload}`, 'app_1', key)).to.equal(null);
    expect(verifyAccountToken('key_whatever', 'app_1', key)).to.equal(null);
  });
});
