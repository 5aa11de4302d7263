// The dashboard's HTML shell and stylesheet, served as /dashboard and /dashboard/app.css.
// The page holds no data and no secret: its script asks for the admin key and calls the
// same /v1 API as any client.
export const INDEX_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>edgemq dashboard</title>
<link rel="stylesheet" href="/dashboard/uplot.css">
<link rel="stylesheet" href="/dashboard/app.css">
</head>
<body>
<header>
  <strong>edgemq</strong>
  <nav>
    <a href="#/overview">Overview</a>
    <a href="#/topics">Topics</a>
    <a href="#/groups">Groups</a>
    <a href="#/dlq">DLQ</a>
    <a href="#/webhooks">Webhooks</a>
    <a href="#/scheduled">Scheduled</a>
    <a href="#/cluster">Cluster</a>
  </nav>
  <span id="flash"></span>
  <button id="logout" title="Forget the API key">Sign out</button>
</header>
<main></main>
<script src="/dashboard/uplot.js"></script>
<script src="/dashboard/app.js"></script>
</body>
</html>
`;

export const APP_CSS = `
:root { --fg: #111827; --muted: #6b7280; --line: #e5e7eb; --accent: #2563eb; --bad: #dc2626; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: #f9fafb; }
header { display: flex; gap: 24px; align-items: center; padding: 10px 24px; background: #111827; color: #fff; }
header strong { font-size: 16px; letter-spacing: .02em; }
nav { display: flex; gap: 4px; flex: 1; }
nav a { color: #d1d5db; text-decoration: none; padding: 6px 10px; border-radius: 6px; }
nav a.active, nav a:hover { background: #374151; color: #fff; }
#flash.ok { color: #86efac; } #flash.bad { color: #fca5a5; }
main { padding: 16px 24px 48px; max-width: 1200px; }
h2 { margin: 18px 0 8px; font-size: 18px; } h3 { margin: 16px 0 6px; font-size: 15px; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(160px, 1fr)); gap: 12px; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; }
.card .label { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.card .value { font-size: 22px; font-weight: 600; margin-top: 2px; }
.chart { background: #fff; border: 1px solid var(--line); border-radius: 8px; margin-top: 14px; padding: 8px; }
table { border-collapse: collapse; width: 100%; background: #fff; border: 1px solid var(--line); }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid var(--line); white-space: nowrap; }
th { background: #f3f4f6; font-weight: 600; font-size: 12px; color: #374151; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.wrap { white-space: normal; word-break: break-word; min-width: 240px; }
tr.fail td { color: var(--bad); } tr.warn td { color: #b45309; }
.empty { color: var(--muted); }
.count { display: inline-block; min-width: 22px; padding: 0 6px; border-radius: 10px; background: #e5e7eb; text-align: center; font-size: 12px; }
button { font: inherit; padding: 4px 10px; border-radius: 6px; border: 1px solid #d1d5db; background: #fff; cursor: pointer; }
button:disabled { opacity: .5; cursor: default; }
button.danger { color: var(--bad); } header button { background: transparent; color: #d1d5db; border-color: #4b5563; }
.login { margin-top: 40px; } .bad { color: var(--bad); }
input { font: inherit; padding: 4px 8px; border: 1px solid #d1d5db; border-radius: 6px; }
`;
