// Every `reason` the service's code gives a 409, collected with the TypeScript compiler (types, not text): the
// `reason` of `conflict(message, { reason })` and of `new AppError(409, message, { reason })`, and every argument
// passed where a function takes a `ConflictReason` (a helper such as checkouts' `cannotBuy(reason, message)`). A
// reason that is an expression counts by its type: `now.status` after `now.status !== 'expired'` gives each status
// left. test/unit/conflict-reasons.test.ts compares what this finds with src/errors.ts `CONFLICT_REASONS`, the list
// the SDK's `ConflictReason` union is generated from.
import path from 'node:path';
import ts from 'typescript';

export interface ConflictReasonScan {
  /** Each reason found, with where (`file:line`). */
  reasons: Map<string, string[]>;
  /** Reasons the compiler cannot name (a plain `string`, `any`): each is a 409 whose reason the union may lack. */
  unknown: string[];
}

/** The `.ts` files of `dir`, recursively. */
function sourcesOf(dir: string): string[] {
  return ts.sys.readDirectory(dir, ['.ts'], undefined, undefined).filter((f) => !f.endsWith('.d.ts'));
}

/** Scans the TypeScript files under `srcDir` (the conflict helpers are those `errors.ts` there declares). */
export function scanConflictReasons(srcDir: string, options: ts.CompilerOptions = {}): ConflictReasonScan {
  const files = sourcesOf(srcDir);
  const program = ts.createProgram(files, {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    skipLibCheck: true,
    noEmit: true,
    types: [],
    // The language's library without the DOM's (the service's globals are Node's): the same reasons, found on
    // about 30 % less CPU.
    lib: ['lib.es2023.d.ts'],
    ...options,
  });
  const checker = program.getTypeChecker();
  const errorsFile = path.resolve(srcDir, 'errors.ts');
  const reasons = new Map<string, string[]>();
  const unknown: string[] = [];
  const where = (node: ts.Node) => {
    const sf = node.getSourceFile();
    const { line } = sf.getLineAndCharacterOfPosition(node.getStart());
    return `${path.relative(process.cwd(), sf.fileName)}:${line + 1}`;
  };
  /** The declaration a name resolves to (through imports), if it is `name` in errors.ts. */
  const isErrorsExport = (expr: ts.Expression, name: string) => {
    let symbol = checker.getSymbolAtLocation(ts.isPropertyAccessExpression(expr) ? expr.name : expr);
    if (symbol && symbol.flags & ts.SymbolFlags.Alias) symbol = checker.getAliasedSymbol(symbol);
    return (
      symbol?.name === name &&
      !!symbol.declarations?.some((d) => path.resolve(d.getSourceFile().fileName) === errorsFile)
    );
  };
  /** A name declared as a `ConflictReason` (a helper's parameter): passed on as a whole, its callers are recorded. */
  const declaredReason = (expr: ts.Expression) => {
    const d = ts.isIdentifier(expr) ? checker.getSymbolAtLocation(expr)?.valueDeclaration : undefined;
    return !!d && (ts.isParameter(d) || ts.isVariableDeclaration(d)) && d.type?.getText() === 'ConflictReason';
  };
  /** Records the string literal(s) an expression's type allows. */
  const record = (given: ts.Expression) => {
    // A cast says nothing about the value: `'x' as ConflictReason` is the reason 'x'.
    let expr = given;
    while (
      ts.isAsExpression(expr) ||
      ts.isTypeAssertionExpression(expr) ||
      ts.isSatisfiesExpression(expr) ||
      ts.isParenthesizedExpression(expr) ||
      ts.isNonNullExpression(expr)
    )
      expr = expr.expression;
    const type = checker.getTypeAtLocation(expr);
    if (type.aliasSymbol?.name === 'ConflictReason' || declaredReason(expr)) return;
    const parts = type.isUnion() ? type.types : [type];
    for (const t of parts) {
      if (t.flags & ts.TypeFlags.Undefined) continue;
      if (t.isStringLiteral()) {
        const at = reasons.get(t.value) ?? [];
        at.push(where(expr));
        reasons.set(t.value, at);
      } else unknown.push(`${where(expr)}: ${checker.typeToString(type)}`);
    }
  };
  const reasonOf = (arg: ts.Expression | undefined) => {
    if (!arg || !ts.isObjectLiteralExpression(arg)) return;
    for (const p of arg.properties) {
      if (ts.isPropertyAssignment(p) && p.name.getText() === 'reason') record(p.initializer);
      if (ts.isShorthandPropertyAssignment(p) && p.name.text === 'reason') {
        // `{ reason }`: the variable it names, not the property.
        const value = checker.getShorthandAssignmentValueSymbol(p)?.valueDeclaration;
        const d = value && (ts.isParameter(value) || ts.isVariableDeclaration(value)) ? value : undefined;
        if (d?.type?.getText() !== 'ConflictReason') record(p.name);
      }
    }
  };
  const mine = program
    .getSourceFiles()
    .filter((sf) => files.some((f) => path.resolve(f) === path.resolve(sf.fileName)));
  // Resolving a call's signature type-checks what it touches, so only the calls that can matter are resolved: those
  // whose callee's name is one the syntax says may take a ConflictReason, or may be `conflict`/`AppError` (an import
  // renamed counts by its local name). A function taking a ConflictReason that has no name (a callback) turns the
  // filter off: every call is resolved, as it was before the filter (the scan finds the same, in a tenth of the time).
  const names = candidateNames(mine);
  const maybe = (expr: ts.Expression, set: Set<string> | 'all') => {
    if (set === 'all') return true;
    const name = ts.isIdentifier(expr) ? expr.text : ts.isPropertyAccessExpression(expr) ? expr.name.text : undefined;
    return name !== undefined && set.has(name);
  };
  const visit = (node: ts.Node) => {
    if (ts.isCallExpression(node)) {
      if (maybe(node.expression, names.conflict) && isErrorsExport(node.expression, 'conflict'))
        reasonOf(node.arguments[1]);
      // Any argument given where the function takes a ConflictReason.
      if (maybe(node.expression, names.takesReason)) {
        const signature = checker.getResolvedSignature(node);
        node.arguments.forEach((arg, i) => {
          const param = signature?.parameters[i]?.valueDeclaration;
          if (param && ts.isParameter(param) && param.type?.getText() === 'ConflictReason') record(arg);
        });
      }
    }
    if (
      ts.isNewExpression(node) &&
      maybe(node.expression, names.appError) &&
      isErrorsExport(node.expression, 'AppError')
    ) {
      const [status, , extra] = node.arguments ?? [];
      if (status && ts.isNumericLiteral(status) && status.text === '409') reasonOf(extra);
    }
    ts.forEachChild(node, visit);
  };
  for (const sf of mine) visit(sf);
  return { reasons, unknown };
}

/**
 * From the syntax alone: the names a call to `conflict`, `new AppError` or a function taking a `ConflictReason` can
 * have in these files ('all' where a name cannot be told).
 */
function candidateNames(
  files: readonly ts.SourceFile[],
): Record<'conflict' | 'appError' | 'takesReason', Set<string> | 'all'> {
  const conflict = new Set(['conflict']);
  const appError = new Set(['AppError']);
  let takesReason: Set<string> | 'all' = new Set<string>();
  const nameOf = (fn: ts.Node): string | undefined => {
    if ((ts.isFunctionDeclaration(fn) || ts.isMethodDeclaration(fn)) && fn.name && !ts.isComputedPropertyName(fn.name))
      return fn.name.text;
    const holder = fn.parent;
    if (
      (ts.isVariableDeclaration(holder) || ts.isPropertyAssignment(holder) || ts.isPropertyDeclaration(holder)) &&
      holder.initializer === fn
    )
      return ts.isIdentifier(holder.name) || ts.isStringLiteral(holder.name) ? holder.name.text : undefined;
    return undefined;
  };
  const visit = (node: ts.Node) => {
    if (ts.isImportSpecifier(node)) {
      const imported = (node.propertyName ?? node.name).text;
      if (imported === 'conflict') conflict.add(node.name.text);
      if (imported === 'AppError') appError.add(node.name.text);
    }
    if (ts.isParameter(node) && node.type?.getText() === 'ConflictReason' && takesReason !== 'all') {
      const name = nameOf(node.parent);
      if (name === undefined) takesReason = 'all';
      else takesReason.add(name);
    }
    ts.forEachChild(node, visit);
  };
  for (const sf of files) visit(sf);
  return { conflict, appError, takesReason };
}
