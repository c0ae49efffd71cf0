import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkReachableByPostgres } from '../../src/db/embedded.js';

describe('embedded PostgreSQL: folders the postgres user cannot enter', () => {
  const root = process.getuid?.() === 0;
  let closed: string;
  beforeEach(() => {
    closed = fs.mkdtempSync(path.join(os.tmpdir(), 'offerkit-closed-')); // mode 0700, as mktemp -d makes
  });
  afterEach(() => fs.rmSync(closed, { recursive: true, force: true }));

  it(`${root ? 'names the closed folder and the fix' : 'is not needed when not root'} for a DATA_DIR inside one`, () => {
    const attempt = () => checkReachableByPostgres(path.join(closed, 'data', 'pg'));
    if (!root) return expect(attempt).not.to.throw();
    expect(attempt).to.throw(`cannot enter ${closed}`);
    expect(attempt).to.throw(`chmod o+x ${closed}`);
  });
  it('lets a folder others may enter through', () => {
    fs.chmodSync(closed, 0o755);
    expect(() => checkReachableByPostgres(path.join(closed, 'data', 'pg'))).not.to.throw();
  });
});
