// The Python SDK's tools: a virtual environment with packages/sdk-python/requirements-dev.txt (every package pinned),
// made once per machine in the tools folder (the machine's cache, src/tools.ts) and named after a hash of that file
// and the Python version, so a second run, of any clone, reuses it and a change of pins makes a new one. Its Python
// runs the SDK's pytest suite, mypy and the README's Python examples (test/sdk/python.test.ts).
import { execFile, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { toolsDir } from '../../src/tools.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const PY_SDK = path.join(ROOT, 'packages/sdk-python');
const REQUIREMENTS = path.join(PY_SDK, 'requirements-dev.txt');

export interface PyResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end (never rejects): its exit code and output. */
export function run(
  command: string,
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeout?: number } = {},
): Promise<PyResult> {
  return new Promise((resolve) => {
    execFile(
      command,
      args,
      { cwd: opts.cwd ?? ROOT, env: opts.env ?? process.env, timeout: opts.timeout ?? 300_000, maxBuffer: 64 << 20 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolve({
          code,
          stdout: String(stdout),
          stderr: String(stderr) + (err && code === 1 ? `\n${err.message}` : ''),
        });
      },
    );
  });
}

/** The directory of the virtual environment for the current pins and Python. */
export function venvDir(python = process.env.PYTHON ?? 'python3'): string {
  const version = spawnSync(python, ['--version'], { encoding: 'utf8' });
  if (version.error || version.status !== 0)
    throw new Error(`the Python SDK's tests need Python 3.10+ (\`${python} --version\` failed); set PYTHON`);
  const key = crypto
    .createHash('sha256')
    .update(fs.readFileSync(REQUIREMENTS))
    .update(version.stdout + version.stderr)
    .digest('hex')
    .slice(0, 12);
  return path.join(toolsDir(), `python-sdk-${key}`);
}

/**
 * The Python of the virtual environment, made the first time (about 15 s with PyPI's downloads). It is built in a
 * directory of its own and renamed into place when complete, so two runs at once never use a half-made one; only
 * `python -m ...` is used, so the renamed environment works (its scripts' first lines keep the old path).
 */
export async function ensurePythonSdkVenv(): Promise<string> {
  const python = process.env.PYTHON ?? 'python3';
  const dir = venvDir(python);
  const bin = path.join(dir, 'bin', 'python');
  if (fs.existsSync(path.join(dir, '.installed'))) return bin;
  const tmp = `${dir}.tmp-${process.pid}-${crypto.randomBytes(3).toString('hex')}`;
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  try {
    const made = await run(python, ['-m', 'venv', '--without-pip', tmp], { timeout: 600_000 });
    if (made.code !== 0)
      throw new Error(
        `${path.basename(python)} -m venv failed (\`apt-get install -y python3-venv\` where venv is missing):\n` +
          `${made.stdout}\n${made.stderr}`,
      );
    // Made without pip of its own (venv's ensurepip installs and byte-compiles pip and setuptools, about 6 CPU-s):
    // the creating Python's pip installs into it (`--python`, pip 22.3+). A Python without such a pip gets the
    // environment's own pip, as `python -m venv` would have made it.
    const tmpPython = path.join(tmp, 'bin', 'python');
    if ((await run(python, ['-m', 'pip', '--python', tmpPython, '--version'])).code !== 0) {
      const pip = await run(tmpPython, ['-m', 'ensurepip'], { timeout: 600_000 });
      if (pip.code !== 0) throw new Error(`ensurepip failed:\n${pip.stdout}\n${pip.stderr}`);
    }
    const [pipCmd, pipArgs] = pipFor(tmpPython);
    const steps: [string, string[]][] = [
      // --no-deps: the file lists the whole resolved set, so a missing pin fails here rather than floating.
      [pipCmd, [...pipArgs, 'install', '--disable-pip-version-check', '-q', '--no-deps', '-r', REQUIREMENTS]],
      [pipCmd, [...pipArgs, 'check', '--disable-pip-version-check']],
    ];
    for (const [cmd, args] of steps) {
      const res = await run(cmd, args, { timeout: 600_000 });
      if (res.code !== 0)
        throw new Error(
          `${path.basename(cmd)} ${args.join(' ')} failed (PyPI must be reachable the first time):\n` +
            `${res.stdout}\n${res.stderr}`,
        );
    }
    fs.writeFileSync(path.join(tmp, '.installed'), fs.readFileSync(REQUIREMENTS));
    // A directory without its marker was left by hand (renames are whole): it is replaced.
    if (fs.existsSync(dir) && !fs.existsSync(path.join(dir, '.installed')))
      fs.rmSync(dir, { recursive: true, force: true });
    try {
      fs.renameSync(tmp, dir);
    } catch (err) {
      // Another run finished first: use its environment.
      if (!fs.existsSync(path.join(dir, '.installed'))) throw err;
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  return bin;
}

/**
 * pip for the environment whose Python is `venvPython`: its own, or, where it was made without one, the creating
 * Python's pip run against it (`pip --python`, which runs pip inside that interpreter, so it installs and builds
 * there as the environment's own pip would).
 */
export function pipFor(venvPython: string): [string, string[]] {
  return fs.existsSync(path.join(path.dirname(venvPython), 'pip'))
    ? [venvPython, ['-m', 'pip']]
    : [process.env.PYTHON ?? 'python3', ['-m', 'pip', '--python', venvPython]];
}

/** One Python example of a Markdown file and, when a ```text block follows it, the output it promises. */
export interface PyExample {
  line: number;
  code: string;
  output: string | null;
}

/** The ```python examples of a Markdown file, in order. */
export function pythonExamples(file: string): PyExample[] {
  const text = fs.readFileSync(file, 'utf8');
  const fence = /```python\n([\s\S]*?)```(\s*```text\n([\s\S]*?)```)?/g;
  return [...text.matchAll(fence)].map((m) => ({
    line: text.slice(0, m.index).split('\n').length,
    code: m[1],
    output: m[3] ?? null,
  }));
}

/**
 * A file's Python examples as one program that runs them in order, as a reader pasting them into one script would
 * (Python has no block scope: later examples use what earlier ones made), with `mark(i)` printed before each.
 */
export function pythonProgram(examples: PyExample[], mark: (i: number) => string): string {
  return examples.map((e, i) => `print(${JSON.stringify(mark(i))}, flush=True)\n${e.code}`).join('\n');
}
