import { cruise, type ICruiseResult } from 'dependency-cruiser';
const r = await cruise(['src/cancel-flows/save-offers.ts','src/http/route.ts','src/runtime.ts'], { tsPreCompilationDeps: true, doNotFollow: { path: 'node_modules' }, maxDepth: 1 }, undefined, { tsConfig: { fileName: 'tsconfig.json' } });
for (const m of (r.output as ICruiseResult).modules.filter(m=>['src/cancel-flows/save-offers.ts','src/http/route.ts','src/runtime.ts'].includes(m.source)))
  for (const d of m.dependencies) if (d.resolved.startsWith('src')) console.log(m.source, d.resolved, d.dependencyTypes.join(','));
