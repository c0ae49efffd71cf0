// Where the tools built once per machine are kept (src/tools.ts, decision 0576).
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { machineToolsDir, PROJECT_TOOLS } from '../../src/tools.js';

describe('the tools folder: once per machine, shared by every clone', () => {
  it('is OFFERKIT_TOOLS_DIR, else $XDG_CACHE_HOME/offerkit/tools, else ~/.cache/offerkit/tools', () => {
    expect(machineToolsDir({ OFFERKIT_TOOLS_DIR: '/srv/tools', XDG_CACHE_HOME: '/x', HOME: '/h' })).to.equal(
      '/srv/tools',
    );
    expect(machineToolsDir({ XDG_CACHE_HOME: '/x', HOME: '/h' })).to.equal('/x/offerkit/tools');
    expect(machineToolsDir({ XDG_CACHE_HOME: '', HOME: '/h' })).to.equal('/h/.cache/offerkit/tools');
  });

  it("falls back to the project's .tools when the machine's folder cannot be made", () => {
    // A file where the folder would be: it cannot be made. Read in a process of its own (the choice is kept once
    // made).
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'offerkit-tools-'));
    try {
      fs.writeFileSync(path.join(dir, 'blocked'), '');
      const pick = (env: Record<string, string>) =>
        spawnSync(
          process.execPath,
          ['--import', 'tsx', '-e', "import('./src/tools.ts').then((t) => console.log(t.toolsDir()))"],
          { cwd: path.resolve(import.meta.dirname, '../..'), env: { ...process.env, ...env }, encoding: 'utf8' },
        ).stdout.trim();
      expect(pick({ OFFERKIT_TOOLS_DIR: path.join(dir, 'blocked', 'tools') })).to.equal(PROJECT_TOOLS);
      expect(pick({ OFFERKIT_TOOLS_DIR: path.join(dir, 'ok') })).to.equal(path.join(dir, 'ok'));
      expect(fs.statSync(path.join(dir, 'ok')).isDirectory()).to.equal(true);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
