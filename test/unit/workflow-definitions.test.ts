import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import {
  checkStoredCommand,
  outboxSignal,
  outboxSignalWithStart,
  outboxStart,
  UnknownWorkflowCommandError,
} from '../../src/temporal/outbox.js';
import * as bundleEntry from '../../workflows/index.js';
import {
  incentiveExpiryDef,
  pauseDef,
  pingDef,
  reservationExpiryDef,
  retentionDef,
  WORKFLOW_DEFINITIONS,
  workflowDefinition,
  webhookDeliveryDef,
  type Workflows,
} from '../../workflows/shared.js';

// At compile time: the bundle entry exports each workflow the contract declares, as the function it declares (its
// input and result), and no workflow the contract does not declare. The contract imports no workflow, so this is
// where the two meet.
const implemented = bundleEntry satisfies Workflows;
type Undeclared = Exclude<keyof typeof bundleEntry, keyof Workflows>;
const noUndeclared: [Undeclared] extends [never] ? true : Undeclared = true;

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sourceFiles(p) : /\.tsx?$/.test(p) ? [p] : [];
  });
}

const handlerNames = WORKFLOW_DEFINITIONS.flatMap((d) =>
  [...Object.values(d.signals), ...Object.values(d.queries), ...Object.values(d.updates)].map((h) => h.name),
);
const quoted = (name: string) => new RegExp(`(['"\`])${name}\\1`);

describe('workflow definitions (workflows/shared.ts)', () => {
  it('name exactly the workflow functions workflows/index.ts (the bundle entry) exports, each once', () => {
    const exported = Object.entries(bundleEntry)
      .filter(([, v]) => typeof v === 'function')
      .map(([k]) => k)
      .sort();
    const defined = WORKFLOW_DEFINITIONS.map((d) => d.name).sort();
    expect(defined).to.deep.equal([...new Set(defined)]);
    expect(defined).to.deep.equal(exported);
    for (const d of WORKFLOW_DEFINITIONS) expect(workflowDefinition(d.name)).to.equal(d);
    expect(Object.keys(implemented).sort()).to.deep.equal(defined);
    expect(noUndeclared).to.equal(true);
    expect(workflowDefinition('noSuchWorkflow')).to.equal(undefined);
  });

  it('give every signal, query and update a name of its own', () => {
    expect(handlerNames).to.deep.equal([...new Set(handlerNames)]);
  });

  it("check a start's input and a signal's arguments against the workflow (at compile time)", () => {
    expect(outboxStart(pingDef, 'p', { message: 'hi' })).to.deep.include({
      kind: 'start',
      workflowType: 'pingWorkflow',
      args: [{ message: 'hi' }],
    });
    expect(outboxSignal(reservationExpiryDef, 'r', reservationExpiryDef.signals.settled, 'committed')).to.deep.include({
      kind: 'signal',
      workflowType: 'reservationExpiryWorkflow',
      signal: 'reservationSettled',
      args: ['committed'],
    });
    const wrong = () => {
      // @ts-expect-error the ping workflow's input is { message }
      outboxStart(pingDef, 'p', { text: 'hi' });
      // @ts-expect-error a scheduled workflow takes no input, so it is not started through the outbox
      outboxStart(retentionDef, 'r', {});
      // @ts-expect-error the settled signal carries the reservation's status
      outboxSignal(reservationExpiryDef, 'r', reservationExpiryDef.signals.settled);
      // @ts-expect-error retarget takes the new target or null
      outboxSignalWithStart(incentiveExpiryDef, 'i', {}, incentiveExpiryDef.signals.retarget, []);
      // @ts-expect-error a signal of another workflow
      outboxSignal(pauseDef, 'p', webhookDeliveryDef.signals.stop);
    };
    // And at run time, a signal of another workflow is refused by the writer.
    expect(wrong).to.throw(/signal stopDelivery is not one of the signals of workflow type pauseWorkflow/);
  });

  it('the relay refuses a stored command naming an unknown workflow type or signal', () => {
    const start = { kind: 'start' as const, workflowId: 'w', args: [] };
    expect(() => checkStoredCommand({ ...start, workflowType: 'noSuchWorkflow' })).to.throw(
      UnknownWorkflowCommandError,
      /unknown workflow type "noSuchWorkflow"/,
    );
    expect(checkStoredCommand({ ...start, workflowType: 'pingWorkflow' })?.name).to.equal('pingWorkflow');
    const signal = { kind: 'signal' as const, workflowId: 'w', args: [] };
    expect(() => checkStoredCommand({ ...signal, workflowType: 'pauseWorkflow', signal: 'stopDelivery' })).to.throw(
      UnknownWorkflowCommandError,
      /unknown signal "stopDelivery" for workflow type pauseWorkflow/,
    );
    expect(checkStoredCommand({ ...signal, workflowType: 'pauseWorkflow', signal: 'pauseEnded' })?.name).to.equal(
      'pauseWorkflow',
    );
    // Rows written before signal rows recorded their workflow type: the signal must still be a known one.
    expect(checkStoredCommand({ ...signal, signal: 'pauseEnded' })).to.equal(null);
    expect(() => checkStoredCommand({ ...signal, signal: 'resume' })).to.throw(UnknownWorkflowCommandError);
  });

  it('no service, activity, workflow or script names a workflow, signal, query or update by a bare string', () => {
    const files = ['src', 'activities', 'workflows', 'scripts', 'bench']
      .flatMap((dir) => sourceFiles(dir))
      .filter((f) => path.normalize(f) !== path.normalize('workflows/shared.ts'));
    expect(files.length).to.be.above(100);
    const names = [...WORKFLOW_DEFINITIONS.map((d) => d.name), ...handlerNames];
    const patterns: [string, RegExp][] = [
      ...names.map((n): [string, RegExp] => [`the literal '${n}'`, quoted(n)]),
      // A workflow this file does not know yet (startWorkflow is a Schedule action's kind, not a workflow).
      ['a literal ending in Workflow', /(['"`])(?!startWorkflow\1)[a-z][A-Za-z]*Workflow\1/],
      ['workflowType set from a literal', /workflowType:\s*['"`]/],
      ['a start, execute or signal-with-start by name', /workflow\.(start|execute|signalWithStart)\(\s*['"`]/],
      ['a signal or update sent by name', /\.(signal|executeUpdate|startUpdate|executeUpdateWithStart)\(\s*['"`]/],
    ];
    const found: string[] = [];
    for (const file of files) {
      const lines = fs.readFileSync(file, 'utf8').split('\n');
      lines.forEach((line, i) => {
        if (/^\s*(\*|\/\*|\/\/)/.test(line)) return; // comments may quote names as documentation
        for (const [what, re] of patterns) if (re.test(line)) found.push(`${file}:${i + 1}: ${what}: ${line.trim()}`);
      });
    }
    expect(found, 'use the definitions in workflows/shared.ts').to.deep.equal([]);
  });
});
