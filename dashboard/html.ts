/**
 * Server-side HTML without a template engine: the `html` tag escapes every interpolated value
 * unless it is already {@link SafeHtml} (built by `html` itself), so text from Redis can never
 * become markup. `layout` wraps a page in the dashboard's chrome.
 */

/** A fragment of HTML known to be safe to embed as is. */
export class SafeHtml {
  constructor(readonly value: string) {}

  toString(): string {
    return this.value;
  }
}

/** A value `html` accepts: text (escaped), a number, safe HTML, nothing, or a list of these. */
export type HtmlValue = string | number | SafeHtml | undefined | null | false | readonly HtmlValue[];

const ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes text for an HTML element or a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

function render(value: HtmlValue): string {
  if (value === undefined || value === null || value === false) return '';
  if (value instanceof SafeHtml) return value.value;
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return escapeHtml(value);
  return value.map(render).join('');
}

/** Tagged template producing {@link SafeHtml}; interpolations are escaped. */
export function html(strings: TemplateStringsArray, ...values: readonly HtmlValue[]): SafeHtml {
  let out = strings[0] ?? '';
  values.forEach((value, i) => {
    out += render(value) + (strings[i + 1] ?? '');
  });
  return new SafeHtml(out);
}

const STYLE = `
:root { color-scheme: light; --fg: #1f2430; --muted: #667085; --line: #e4e7ec; --bg: #f8f9fb; --accent: #3b5bdb; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; gap: 24px; align-items: center; padding: 12px 24px; background: #1f2430; color: #fff; }
header a { color: #dfe4ff; text-decoration: none; }
header strong { font-size: 16px; margin-right: 12px; }
main { padding: 20px 24px; max-width: 1400px; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 24px 0 8px; }
.muted { color: var(--muted); }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12.5px; }
table { border-collapse: collapse; width: 100%; background: #fff; border: 1px solid var(--line); }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: #f2f4f7; font-weight: 600; font-size: 12.5px; color: #344054; }
td.nowrap, td.mono { white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
a { color: var(--accent); }
.badge { display: inline-block; white-space: nowrap; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600; background: #eef1f6; }
.b-success, .b-completed, .b-settled { background: #dcfae6; color: #067647; }
.b-requeue, .b-requeued, .b-delayed { background: #e0eaff; color: #3538cd; }
.b-error, .b-retrying { background: #fef0c7; color: #93370d; }
.b-terminal, .b-failed { background: #fee4e2; color: #b42318; }
.b-running, .b-active, .b-queued, .b-waiting, .b-prioritized { background: #e0f2fe; color: #026aa2; }
.verdict { padding: 12px 16px; margin: 12px 0; border-radius: 6px; background: #fff; border: 1px solid var(--line); border-left: 4px solid var(--accent); }
.verdict.retrying { border-left-color: #dc6803; } .verdict.failed { border-left-color: #d92d20; } .verdict.settled { border-left-color: #079455; }
.hint { margin-top: 6px; color: #93370d; }
.error { color: #b42318; white-space: pre-wrap; word-break: break-word; }
form.search { display: flex; gap: 8px; align-items: center; flex-wrap: wrap; }
form.search input { padding: 6px 8px; border: 1px solid #d0d5dd; border-radius: 4px; font: inherit; }
form.search button { padding: 6px 14px; border: 0; border-radius: 4px; background: var(--accent); color: #fff; font: inherit; cursor: pointer; }
`;

/** A complete page with the dashboard's header and styles. */
export function layout(title: string, body: SafeHtml): SafeHtml {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · nodelet</title>
<style>${new SafeHtml(STYLE)}</style>
</head>
<body>
<header><strong>nodelet</strong><a href="/">Pods &amp; nodes</a><a href="/queues">Queues (bull-board)</a></header>
<main>
${body}
</main>
</body>
</html>
`;
}
