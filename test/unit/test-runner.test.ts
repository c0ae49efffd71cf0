import { expect } from 'chai';
import { split } from '../../scripts/test.js';

describe('npm test: the suite split in halves (scripts/test.ts)', () => {
  const files = [
    'test/a.test.ts',
    'test/console-browser.test.ts',
    'test/outages.test.ts',
    'test/startup.test.ts',
    'test/unit/x.test.ts',
    'test/z.test.ts',
  ];
  const passes = ['admin', 'secret', 'publishable', 'destructive'];

  it('puts every file and every fuzzer pass in exactly one half, files in name order', () => {
    const groups = split(files, passes, 2);
    expect(groups).to.have.length(2);
    expect(groups.flatMap((g) => g.files).sort()).to.deep.equal([...files].sort());
    expect(groups.flatMap((g) => g.passes).sort()).to.deep.equal([...passes].sort());
    for (const g of groups) expect(g.files).to.deep.equal([...g.files].sort());
  });

  it('balances the halves by measured time: they differ by no more than the longest single item', () => {
    const [a, b] = split(files, passes, 2);
    expect(Math.abs(a.seconds - b.seconds)).to.be.at.most(170);
    // The two longest fuzzer passes land in different halves.
    expect(a.passes.includes('admin')).to.not.equal(a.passes.includes('secret'));
  });

  it('one group is the whole suite', () => {
    const [only] = split(files, passes, 1);
    expect(only.files).to.deep.equal([...files].sort());
    expect(only.passes.sort()).to.deep.equal([...passes].sort());
  });
});
