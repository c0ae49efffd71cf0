// What tests import from the mocha reporter (reporter.cjs, loaded by mocha itself as CommonJS).
/** A failure in one line: the error's first line, and a timed-out browser action's call log in brief. */
export declare function failureText(err: unknown): string;
