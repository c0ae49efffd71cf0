// The 409 reasons the SDK types (`ConflictReason`, `ConflictError.reason`) are exactly the ones the code gives: a
// reason given anywhere in src/ that src/errors.ts CONFLICT_REASONS lacks fails here (and `conflict()` refuses it at
// compile time), and so does a listed reason no code gives any more.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { CONFLICT_REASONS as SDK_REASONS, type ConflictError, type ConflictReason } from '@offerkit/sdk';
import { scanConflictReasons } from '../../scripts/conflict-reasons.js';
import { CONFLICT_REASONS } from '../../src/errors.js';

// Compile-time: the SDK's error says the union, not `string` (`npx tsc -p .` checks this file).
const reasonType: ConflictError['reason'] extends ConflictReason | undefined ? true : false = true;
// @ts-expect-error a reason the service never gives is not one
const notAReason: ConflictReason = 'whatever';

describe('409 reasons: the list the SDK is generated from is what the code gives', function () {
  this.timeout(180_000);

  it('every reason a 409 carries in src/ is listed, every listed reason is given somewhere, none is a plain string', () => {
    void [reasonType, notAReason];
    const { reasons, unknown } = scanConflictReasons(path.resolve('src'));
    expect(unknown, 'reasons the compiler cannot name').to.deep.equal([]);
    const listed = Object.keys(CONFLICT_REASONS).sort();
    const found = [...reasons.keys()].sort();
    expect(
      found.filter((r) => !listed.includes(r)).map((r) => `${r} (${reasons.get(r)!.join(', ')})`),
      'given but not in src/errors.ts CONFLICT_REASONS',
    ).to.deep.equal([]);
    expect(
      listed.filter((r) => !found.includes(r)),
      'listed but given nowhere',
    ).to.deep.equal([]);
    // Spot checks: a literal, a helper's argument, a narrowed status, the account actor's refusals.
    expect(reasons.get('same_plan')?.[0]).to.match(/plan-changes\.service\.ts:\d+$/);
    expect(reasons.get('bump_owned')?.[0]).to.match(/checkout-creation\.service\.ts:\d+$/);
    expect(reasons.has('completed') && reasons.has('cancelled')).to.equal(true);
    expect(reasons.has('change_scheduled') && reasons.has('past_due')).to.equal(true);
    // The published SDK carries the same list (npm run sdk:check keeps the generated file current).
    expect([...SDK_REASONS]).to.deep.equal(Object.keys(CONFLICT_REASONS));
  });

  it('the scan finds a new reason however it is written, and names one it cannot read', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'conflict-reasons-'));
    try {
      fs.writeFileSync(
        path.join(dir, 'errors.ts'),
        `export class AppError extends Error {
           constructor(readonly status: number, message: string, readonly extra?: Record<string, unknown>) { super(message); }
         }
         export type ConflictReason = 'listed';
         export const conflict = (message: string, extra?: { reason?: ConflictReason; [k: string]: unknown }) =>
           new AppError(409, message, extra);`,
      );
      fs.writeFileSync(
        path.join(dir, 'service.ts'),
        `import { AppError, conflict, type ConflictReason } from './errors.js';
         const refuse = (reason: ConflictReason, m: string) => conflict(m, { reason });
         declare const state: 'open' | 'closed';
         declare const anything: string;
         export const all = [
           conflict('a', { reason: 'listed' }),
           refuse('listed', 'b'),
           new AppError(409, 'c', { reason: 'bypassed' }),
           new AppError(403, 'd', { reason: 'not_a_conflict' }),
           conflict('e', { reason: state as never }),
           new AppError(409, 'f', { reason: state }),
           new AppError(409, 'g', { reason: anything }),
           conflict('h', { reason: 'cast_in' as ConflictReason }),
         ];`,
      );
      const { reasons, unknown } = scanConflictReasons(dir);
      expect([...reasons.keys()].sort()).to.deep.equal(['bypassed', 'cast_in', 'closed', 'listed', 'open']);
      expect(reasons.get('listed')).to.have.length(2);
      expect(unknown).to.have.length(1); // `anything` (`state as never` is read through its cast)
      expect(unknown.join('\n')).to.match(/service\.ts:12: string/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
