// The service's own small HTML pages (the OAuth sign-in and consent, and their errors): one shell, escaped text.
// Generic: the throttle answers a throttled page with `errorPage` without knowing which page it was.

export const esc = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

export function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${esc(title)} · offerkit</title>
<style>
  body { font: 16px/1.5 system-ui, sans-serif; margin: 0; background: #f6f7f9; color: #1a1a1a; }
  main { max-width: 34rem; margin: 3rem auto; background: #fff; padding: 2rem; border-radius: 8px; box-shadow: 0 1px 3px rgba(0,0,0,.15); }
  h1 { font-size: 1.4rem; margin-top: 0; }
  fieldset { border: 1px solid #ccd; border-radius: 6px; margin: 1rem 0; }
  label { display: block; margin: .4rem 0; }
  .hint { display: block; color: #555; font-size: .9rem; margin-left: 1.6rem; }
  input[type=password], select { width: 100%; padding: .5rem; font: inherit; box-sizing: border-box; }
  button { font: inherit; padding: .55rem 1.2rem; margin-right: .5rem; border-radius: 6px; border: 1px solid #334; cursor: pointer; }
  button.primary { background: #1f4fd1; color: #fff; border-color: #1f4fd1; }
  :focus-visible { outline: 3px solid #f5a623; outline-offset: 2px; }
  .error { color: #a00; font-weight: 600; }
</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>`;
}

export function errorPage(title: string, message: string): string {
  return page(
    title,
    `<h1>${esc(title)}</h1>\n<p role="alert">${esc(message)}</p>\n` +
      '<p>Close this window and start the sign-in again from your MCP client.</p>',
  );
}
