// The SDK's types, as a user's strict project sees them (issue 39, item 6): the literal unions the API documents
// (generated from the zod schemas, never written by hand), `object` on every member of an answer that may be one of
// two records, `ConflictError.reason` as the union of the reasons the service gives; and every TypeScript example of
// packages/sdk/README.md, docs/sdk.md, README.md and packages/elements/README.md compiles under `strict` with
// `exactOptionalPropertyTypes` against the built package (`@offerkit/sdk` as users import it).
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { readmeModule, readmePrelude } from '../helpers/readme.js';

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** The files whose ```ts examples must compile, and how many each has at least. */
const READMES: Record<string, number> = {
  'packages/sdk/README.md': 8,
  'README.md': 1,
  'packages/elements/README.md': 1,
  'docs/sdk.md': 0,
};

/** Compile-time assertions about the published types; each `@ts-expect-error` is a mistake the types must refuse. */
const typeAssertions = `
import {
  CONFLICT_REASONS,
  ConflictError,
  type Access,
  type CancelSession,
  type Checkout,
  type ConflictReason,
  type OffersCheckoutResponse,
  type PlansCheckoutResponse,
  type Subscription,
  type SubscriptionsChangeResponse,
} from '@offerkit/sdk';

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Assert<T extends true> = T;

// A plan change's direction, effective and policy: the documented values, not \`string\`.
export type Direction = Assert<Equal<SubscriptionsChangeResponse['direction'], 'upgrade' | 'downgrade'>>;
export type Effective = Assert<Equal<SubscriptionsChangeResponse['effective'], 'now' | 'renewal'>>;
export type Policy = Assert<Equal<SubscriptionsChangeResponse['policy'], 'prorate_now' | 'at_renewal' | 'no_proration'>>;
export type Pending = Assert<Equal<NonNullable<Subscription['pending_change']>['effective'], 'now' | 'renewal'>>;
export type Status = Assert<Equal<Subscription['status'], 'active' | 'paused' | 'past_due' | 'cancelled'>>;
export type CheckoutStatus = Assert<Equal<Checkout['status'], 'created' | 'completed' | 'cancelled' | 'expired'>>;
export type AccessSubscription = Assert<
  Equal<Access['subscription_status'], 'active' | 'paused' | 'past_due' | 'cancelled' | null>
>;
export type StepType = Assert<Equal<CancelSession['step']['type'], 'question' | 'text' | 'offer' | 'confirm'>>;
export type OfferKind = Assert<
  Equal<NonNullable<CancelSession['offer']>['kind'], 'discount' | 'downgrade' | 'pause' | 'incentive'>
>;
export type SessionInterval = Assert<
  Equal<NonNullable<CancelSession['account']['subscription']>['interval'], 'month' | 'year'>
>;

// Every member of the checkout-or-plan-change answer says which it is.
export type EveryMember = Assert<
  [OffersCheckoutResponse, PlansCheckoutResponse] extends [{ object: 'checkout' | 'plan_change' }, { object: 'checkout' | 'plan_change' }]
    ? true
    : false
>;
export type Objects = Assert<Equal<OffersCheckoutResponse['object'], 'checkout' | 'plan_change'>>;
export type CheckoutObject = Assert<Equal<Checkout['object'], 'checkout'>>;
export type ChangeFields = Assert<
  Equal<Extract<PlansCheckoutResponse, { object: 'plan_change' }>['direction'], 'upgrade' | 'downgrade'>
>;

declare const answer: OffersCheckoutResponse;
if (answer.object === 'checkout') {
  const link: string | null = answer.open_url; // narrowed by \`object\`
  void link;
} else {
  const policy: 'prorate_now' | 'at_renewal' | 'no_proration' = answer.policy;
  void policy;
}
if ('open_url' in answer) {
  // @ts-expect-error open_url may be null: the guard the README used to show does not make it a string
  const href: string = answer.open_url;
  void href;
}

// 409 reasons: a union, checked where it is used.
export type Reason = Assert<Equal<ConflictError['reason'], ConflictReason | undefined>>;
export type Listed = Assert<Equal<(typeof CONFLICT_REASONS)[number], ConflictReason>>;
export type Scheduled = Assert<'change_scheduled' extends ConflictReason ? true : false>;
// @ts-expect-error a reason the service does not give
export const unknownReason: ConflictReason = 'over_the_moon';
export function words(e: ConflictError): string {
  switch (e.reason) {
    case 'already_subscribed':
      return 'change your plan';
    case 'change_scheduled':
      return 'withdraw or replace the scheduled change';
    // @ts-expect-error not a reason: the compiler checks the cases
    case 'no_such_reason':
      return '';
    default:
      return e.message;
  }
}
`;

describe('SDK: published types (literal unions, object on every member, 409 reasons) and README examples under strict', function () {
  this.timeout(180_000);
  let dir: string;
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'offerkit-types-'));
    // `@offerkit/sdk` as a user's project has it: the built workspace package, through node_modules.
    fs.symlinkSync(path.join(root, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
    fs.writeFileSync(
      path.join(dir, 'package.json'),
      JSON.stringify({ name: 'strict-user', private: true, type: 'module' }),
    );
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  /** tsc on `files` of the temporary project, as a user's strict project would run it; its output. */
  async function tsc(files: string[]): Promise<string> {
    const config = `tsconfig-${files.length}-${files[0]}.json`;
    fs.writeFileSync(
      path.join(dir, config),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          exactOptionalPropertyTypes: true,
          noEmit: true,
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          lib: ['es2022', 'dom'],
          types: [],
          skipLibCheck: false,
        },
        files,
      }),
    );
    const bin = path.join(root, 'node_modules/typescript/bin/tsc');
    const res = await run(process.execPath, [bin, '-p', path.join(dir, config)]).catch((e: { stdout: string }) => e);
    return res.stdout;
  }

  it('the type assertions and every README example compile under strict and exactOptionalPropertyTypes', async () => {
    const files = ['types.ts'];
    fs.writeFileSync(path.join(dir, 'types.ts'), typeAssertions);
    for (const [file, least] of Object.entries(READMES)) {
      const count = [...fs.readFileSync(path.join(root, file), 'utf8').matchAll(/```ts\n/g)].length;
      expect(count, `${file}: TypeScript examples`).to.be.at.least(least);
      if (!count) continue;
      const name = `readme-${file.replace(/[^\w]+/g, '-')}.ts`;
      fs.writeFileSync(path.join(dir, name), readmeModule(path.join(root, file), readmePrelude));
      files.push(name);
    }
    expect(await tsc(files), 'tsc output').to.equal('');
  });

  it('tsc fails on what the issue found (so the check above can fail)', async () => {
    // The README's old guard, as a reader would use it in a browser (`open_url` may be null), and an optional field
    // set to undefined (refused under exactOptionalPropertyTypes).
    fs.writeFileSync(
      path.join(dir, 'old-guard.ts'),
      [
        "import { PublishableClient } from '@offerkit/sdk';",
        'declare const pub: PublishableClient;',
        'declare const page: { href: string };',
        "const checkout = await pub.offers.checkout('spring_sale', { plan: 'pro', interval: 'month', account: 'bob' });",
        "if ('open_url' in checkout) page.href = checkout.open_url;",
        "await pub.offers.getPublic('spring_sale', { account: undefined });",
        'export {};',
      ].join('\n'),
    );
    const out = await tsc(['old-guard.ts']);
    expect(out).to.match(/old-guard\.ts\(5,\d+\): error TS2322: Type 'string \| null' is not assignable/);
    expect(out).to.match(/old-guard\.ts\(6,\d+\): error TS2379/);
  });
});
