// Usage: tsx .scratch/move.mts old1=new1 old2=new2 ...  (repo-relative paths of .ts files)
// git mv each file, then rewrite every relative import/export/import() specifier in the repo's TS sources that
// pointed at a moved file, and every relative specifier inside a moved file.
import fs from 'node:fs';
import path from 'node:path';
import { execSync } from 'node:child_process';
const root = process.cwd();
const pairs = process.argv.slice(2).map((a) => a.split('=').map((p) => path.resolve(root, p)) as [string, string]);
const moved = new Map(pairs);
const roots = ['src', 'workflows', 'activities', 'test', 'scripts', 'bench', 'console', 'packages'];
const files: string[] = [];
const walk = (d: string) => {
  for (const e of fs.readdirSync(d, { withFileTypes: true })) {
    if (e.name === 'node_modules' || e.name === 'dist') continue;
    const p = path.join(d, e.name);
    if (e.isDirectory()) walk(p);
    else if (/\.(m?ts|tsx)$/.test(e.name)) files.push(p);
  }
};
for (const r of roots) if (fs.existsSync(path.join(root, r))) walk(path.join(root, r));
const toTs = (abs: string) => {
  for (const c of [abs.replace(/\.js$/, '.ts'), abs.replace(/\.js$/, '.tsx'), abs]) if (fs.existsSync(c) || moved.has(c)) return c;
  return null;
};
const spec = (fromFile: string, target: string, ext: string) => {
  let rel = path.relative(path.dirname(fromFile), target).replace(/\.tsx?$/, ext);
  if (!rel.startsWith('.')) rel = `./${rel}`;
  return rel;
};
let changed = 0;
for (const file of files) {
  const src = fs.readFileSync(file, 'utf8');
  const newFile = moved.get(file) ?? file;
  const out = src.replace(/((?:from|import)\s*\(?\s*)(['"])(\.{1,2}\/[^'"]+)\2/g, (m, pre, q, s) => {
    const abs = path.resolve(path.dirname(file), s);
    const ts = toTs(abs);
    if (!ts) return m;
    const target = moved.get(ts) ?? ts;
    if (target === ts && newFile === file) return m;
    const ext = s.endsWith('.js') ? '.js' : s.endsWith('.ts') ? '.ts' : '';
    return `${pre}${q}${spec(newFile, target, ext)}${q}`;
  });
  if (out !== src) { fs.writeFileSync(file, out); changed++; }
}
for (const [a, b] of pairs) {
  fs.mkdirSync(path.dirname(b), { recursive: true });
  execSync(`git mv ${JSON.stringify(path.relative(root, a))} ${JSON.stringify(path.relative(root, b))}`);
}
console.log(`moved ${pairs.length}, rewrote ${changed} files`);
