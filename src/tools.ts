// Where the tools the project builds or installs once are kept: the Temporal CLI (`npm start`'s dev server), and for
// the tests Helm, the Temporal server, schemathesis' and the Python SDK's virtual environments. They are the same
// for every clone of the project on a machine (each folder is named after its pinned version), so they live in the
// machine's cache of them, as Go keeps its build cache and npm its packages: a second clone, or CI on a fresh clone,
// builds nothing again (decision 0576).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PROJECT_ROOT } from './root.js';

const projectRoot = PROJECT_ROOT;
/** The project's own ignored folder: where the tools are kept when the machine's cache cannot be used. */
export const PROJECT_TOOLS = path.join(projectRoot, '.tools');

/** The machine's cache folder the environment names: `OFFERKIT_TOOLS_DIR`, else the user's cache folder's. */
export function machineToolsDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.OFFERKIT_TOOLS_DIR) return path.resolve(env.OFFERKIT_TOOLS_DIR);
  const cache = env.XDG_CACHE_HOME || path.join(env.HOME || os.homedir(), '.cache');
  return path.join(cache, 'offerkit', 'tools');
}

let chosen: string | undefined;

/**
 * The folder the tools are kept in: the machine's (`machineToolsDir`), or the project's `.tools/` when that one
 * cannot be made or written (no home folder, a read-only one).
 */
export function toolsDir(): string {
  if (chosen) return chosen;
  const machine = machineToolsDir();
  try {
    fs.mkdirSync(machine, { recursive: true });
    fs.accessSync(machine, fs.constants.W_OK);
    chosen = machine;
  } catch {
    chosen = PROJECT_TOOLS;
  }
  return chosen;
}
