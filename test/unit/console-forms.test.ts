// The console's small form helpers (console/src/forms.ts), shared by the editors: ids as the API normalizes them,
// blank number fields, and the schema's checks worded as the API words them.
import { expect } from 'chai';
import {
  intBetween,
  isoFromLocal,
  localInput,
  normalizeId,
  num,
  orNull,
  textProblem,
  uniqueId,
} from '../../console/src/forms.js';

describe('console form helpers', () => {
  it('normalizes an id as the API does', () => {
    expect(normalizeId('Too Expensive!')).to.equal('too_expensive');
    expect(normalizeId('Ünï-cödé 2')).to.equal('ncd_2');
  });

  it('makes an id not yet taken, from the title or a placeholder', () => {
    expect(uniqueId('Save offer', [])).to.equal('save_offer');
    expect(uniqueId('Save offer', ['save_offer', 'save_offer_2'])).to.equal('save_offer_3');
    expect(uniqueId('!!!', ['step'])).to.equal('step_2');
  });

  it('keeps a blank number field blank, and null where blank means unlimited', () => {
    expect(num(5)).to.equal(5);
    expect(num('  ')).to.equal('');
    expect(num('1.5')).to.equal(1.5);
    expect(orNull('')).to.equal(null);
    expect(orNull(0)).to.equal(0);
  });

  it('checks whole numbers in a range with the API’s words', () => {
    expect(intBetween(3, 1, 12)).to.equal(null);
    expect(intBetween('', 1, 12)).to.equal('is required');
    expect(intBetween('', 1, 12, false)).to.equal(null);
    expect(intBetween(2.5, 1, 12)).to.equal('must be a whole number');
    expect(intBetween(13, 1, 12)).to.equal('must be between 1 and 12');
  });

  it('checks trimmed text against its bound', () => {
    expect(textProblem('  ', 10, true)).to.equal('must not be empty');
    expect(textProblem('', 10, false)).to.equal(null);
    expect(textProblem(` ${'x'.repeat(10)} `, 10, true)).to.equal(null);
    expect(textProblem('x'.repeat(11), 10, false)).to.equal('must be at most 10 characters');
  });

  it('turns a stored time into a datetime-local value and back to the same minute', () => {
    const iso = '2030-06-01T08:45:00.000Z';
    expect(localInput(iso)).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d$/);
    expect(isoFromLocal(localInput(iso))).to.equal(iso);
    expect(localInput(null)).to.equal('');
    expect(isoFromLocal('')).to.equal(null);
  });
});
