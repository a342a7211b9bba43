import { day, h, svg } from './dom.ts';

export interface PassRateDay {
  date: string;
  passed: number;
  failed: number;
}

/** Where each day's point sits, in a box of `width` × `height` with `pad` around the plot. */
export function chartPoints(days: readonly PassRateDay[], width: number, height: number, pad: number): Array<{ x: number; y: number; rate: number | null }> {
  const span = Math.max(days.length - 1, 1);
  return days.map((entry, index) => {
    const runs = entry.passed + entry.failed;
    const rate = runs === 0 ? null : entry.passed / runs;
    const x = days.length === 1 ? width / 2 : pad + (index / span) * (width - 2 * pad);
    const y = pad + (1 - (rate ?? 0)) * (height - 2 * pad);
    return { x: Math.round(x * 10) / 10, y: Math.round(y * 10) / 10, rate };
  });
}

/**
 * The pass rate of mirror replays per day, as a small inline SVG line with a
 * point per day, and the same numbers as a table for whoever cannot see it.
 */
export function passRateChart(days: readonly PassRateDay[]): HTMLElement {
  const width = 320;
  const height = 120;
  const pad = 16;
  const points = chartPoints(days, width, height, pad);
  const drawn = points.filter((point) => point.rate !== null);
  const last = days.at(-1);
  const lastRate = last === undefined || last.passed + last.failed === 0 ? null : Math.round((100 * last.passed) / (last.passed + last.failed));
  const description = days.length === 0 ? 'No replays yet.' : `Pass rate over ${days.length} ${days.length === 1 ? 'day' : 'days'}${lastRate === null ? '' : `, ${lastRate}% on the last`}.`;
  const titleId = `chart-title-${days.length}-${last?.date ?? 'none'}`;
  const picture = svg(
    'svg',
    { class: 'chart', viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-labelledby': titleId },
    svg('title', { id: titleId }, description),
    [0, 0.5, 1].map((level) => {
      const y = pad + (1 - level) * (height - 2 * pad);
      return [
        svg('line', { class: 'grid', x1: pad, x2: width - pad, y1: y, y2: y }),
        svg('text', { class: 'axis', x: 2, y: y + 4 }, `${Math.round(level * 100)}%`),
      ];
    }),
    drawn.length > 1 ? svg('polyline', { class: 'line', points: drawn.map((point) => `${point.x},${point.y}`).join(' ') }) : null,
    drawn.map((point) => svg('circle', { class: 'point', cx: point.x, cy: point.y, r: 3.5 })),
  );
  const table = h(
    'table',
    { class: 'chart-data' },
    h('caption', { class: 'visually-hidden' }, 'Replays per day'),
    h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Day'), h('th', { scope: 'col' }, 'Passed'), h('th', { scope: 'col' }, 'Failed'))),
    h(
      'tbody',
      null,
      days.map((entry) => h('tr', null, h('th', { scope: 'row' }, day(entry.date)), h('td', null, String(entry.passed)), h('td', null, String(entry.failed)))),
    ),
  );
  return h('figure', { class: 'chart-figure' }, picture, h('figcaption', null, description), h('details', null, h('summary', null, 'The numbers'), table));
}
