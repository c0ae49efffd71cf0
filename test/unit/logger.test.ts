import { Writable } from 'node:stream';
import { expect } from 'chai';
import { pino } from 'pino';
import { PinoPretty } from 'pino-pretty';
import { prettyMessage, resolveLogFormat } from '../../src/logger.js';

describe('the log format', () => {
  it('auto is pretty on a terminal and JSON on a pipe; json and pretty are what they say', () => {
    expect(resolveLogFormat('auto', true)).to.equal('pretty');
    expect(resolveLogFormat('auto', false)).to.equal('json');
    expect(resolveLogFormat('json', true)).to.equal('json');
    expect(resolveLogFormat('pretty', false)).to.equal('pretty');
  });

  it('a request is one short line: method, path, status, duration (no request id)', () => {
    const line = prettyMessage({
      level: 30,
      msg: 'request',
      method: 'POST',
      path: '/apps/app_1/plans',
      status: 201,
      durationMs: 12.5,
      requestId: 'a0b1c2d3-e4f5-4a6b-8c7d-9e0f1a2b3c4d',
    });
    expect(line).to.equal('POST /apps/app_1/plans 201 12.5ms');
  });

  it("other records: the component, the message, fields as key=value, lists counted, an error's message", () => {
    expect(
      prettyMessage({ level: 30, component: 'postgres', msg: 'embedded PostgreSQL ready', port: 5432, pid: 1 }),
    ).to.equal('[postgres] embedded PostgreSQL ready port=5432');
    expect(prettyMessage({ level: 30, msg: 'applied database migrations', applied: ['a', 'b', 'c'] })).to.equal(
      'applied database migrations applied=[3]',
    );
    expect(prettyMessage({ level: 30, msg: 'x', note: 'two words' })).to.equal('x note="two words"');
    const warn = prettyMessage({
      level: 40,
      msg: 'retrying',
      err: { message: 'refused', stack: 'Error: refused\n at' },
    });
    expect(warn).to.equal('retrying: refused');
    const error = prettyMessage({ level: 50, msg: 'failed', err: { message: 'boom', stack: 'Error: boom\n    at f' } });
    expect(error).to.equal('failed: boom\nError: boom\n    at f');
  });

  it('through pino-pretty as the service configures it: one line per record, time and level first', () => {
    let out = '';
    const sink = new Writable({
      write(chunk, _enc, done) {
        out += String(chunk);
        done();
      },
    });
    const logger = pino(
      { base: { pid: 1 } },
      PinoPretty({
        sync: true,
        colorize: false,
        destination: sink,
        translateTime: 'SYS:HH:MM:ss',
        hideObject: true,
        ignore: 'pid,hostname,name',
        messageFormat: (log) => prettyMessage(log),
      }),
    );
    logger.info({ method: 'GET', path: '/health', status: 200, durationMs: 1.2, requestId: 'r' }, 'request');
    logger.warn({ component: 'outbox' }, 'backing off');
    const lines = out.trim().split('\n');
    expect(lines).to.have.length(2);
    expect(lines[0]).to.match(/^\[\d\d:\d\d:\d\d\] INFO: GET \/health 200 1\.2ms$/);
    expect(lines[1]).to.match(/^\[\d\d:\d\d:\d\d\] WARN: \[outbox\] backing off$/);
  });
});
