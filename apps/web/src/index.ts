/** What the page shows about the running Roster. */
export interface HomePageStatus {
  database: 'embedded' | 'server';
  agents: number;
}

const escapes: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escape text for HTML; every value the page shows goes through it. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => escapes[character] ?? character);
}

/** The local web page served at `/`. */
export function renderHomePage(status: HomePageStatus): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Roster</title>
<style>
  body { font: 16px/1.5 system-ui, sans-serif; max-width: 40rem; margin: 3rem auto; padding: 0 1rem; color: #1d2330; }
  code { background: #eef1f6; padding: 0.1rem 0.3rem; border-radius: 4px; }
</style>
</head>
<body>
<h1>Roster</h1>
<p>A wallet of agents that remember what you tell them, per person, and prove what they learned.</p>
<ul>
  <li>Database: ${escapeHtml(status.database)}</li>
  <li>Agents: ${status.agents}</li>
</ul>
<p>Health: <a href="/healthz"><code>/healthz</code></a></p>
</body>
</html>
`;
}
